package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/projections"
)

// state is a run's progress, written after every chunk (StateFile) so a
// run that crashed or was stopped resumes after the last chunk it
// finished, with the keys that differed so far.
type state struct {
	// Shape identifies the projection's compared columns and key: a run
	// whose declaration changed starts over.
	Shape           string    `json:"shape"`
	After           Key       `json:"after"`
	Kinds           keyBinder `json:"kinds"`
	SourceRows      int64     `json:"source_rows"`
	SinkRows        int64     `json:"sink_rows"`
	Chunks          int64     `json:"chunks"`
	ChunksDiffering int64     `json:"chunks_differing"`
	Suspects        []Key     `json:"suspects"`
	Resumed         bool      `json:"-"`
}

func shape(p *projections.Projection) string {
	pl := newPlan(p, nil)
	var cols []string
	for _, c := range pl.cols {
		cols = append(cols, c.Read+"="+c.Src)
	}
	w := ""
	if p.Where != nil {
		w = p.Where.String()
	}
	return fmt.Sprintf("%s.%s -> %s %v [%s] where %s", p.SourceDB, p.SourceTbl, p.Table, p.Key, strings.Join(cols, ","), w)
}

// StateFile is where a projection's run keeps its progress under dataDir.
func StateFile(dataDir, projection string) string {
	return filepath.Join(dataDir, "verify", projection+".json")
}

func loadState(path string, p *projections.Projection) (*state, error) {
	st := &state{}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading verify progress %s: %w", path, err)
	}
	if err := json.Unmarshal(b, st); err != nil || st.Shape != shape(p) {
		// Unreadable, or another declaration's: start over.
		return &state{}, nil
	}
	st.Resumed = true
	return st, nil
}

func saveState(path string, p *projections.Projection, st *state) error {
	if path == "" {
		return nil
	}
	st.Shape = shape(p)
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("verify progress directory (data_dir): %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing verify progress %s: %w", tmp, err)
	}
	return os.Rename(tmp, path)
}

func removeState(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// scanLine shows the scan through progress.Line: rows scanned of the
// estimate, the rate of this run (a resumed run's earlier rows are not
// its work), chunks that differed, keys under re-check.
type scanLine struct {
	line     progress.Line
	name     string
	estimate int64
	start    time.Time
	from     int64 // rows scanned when this run began
	text     string
}

func newScanLine(line progress.Line, name string, estimate, from int64) *scanLine {
	return &scanLine{line: line, name: name, estimate: estimate, start: time.Now(), from: from}
}

func (p *scanLine) update(rows, differing int64, suspects int) {
	if p.line.Out == nil {
		return
	}
	pct := ""
	if p.estimate > 0 {
		pct = fmt.Sprintf(" (~%d%%)", min(100, rows*100/p.estimate))
	}
	p.text = fmt.Sprintf("%s: %d rows%s, %.0f rows/s, %d chunks differ, %d keys to re-check", p.name, rows, pct, progress.Rate(rows-p.from, time.Since(p.start)), differing, suspects)
	p.line.Show(p.text, false)
}

// done writes the last state as the final line.
func (p *scanLine) done() {
	if p.line.Out != nil && p.text != "" {
		p.line.Show(p.text, true)
	}
}
