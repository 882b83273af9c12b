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

	rows, differing int64 // the last update's
	suspects        int
}

func newScanLine(line progress.Line, name string, estimate, from int64) *scanLine {
	return &scanLine{line: line, name: name, estimate: estimate, start: time.Now(), from: from}
}

func (p *scanLine) update(rows, differing int64, suspects int) {
	if p.line.Out == nil {
		return
	}
	p.rows, p.differing, p.suspects = rows, differing, suspects
	p.line.Show(p.format(false), false)
}

// format is the line: the percentage only against an estimate, 100 once
// the scan is through (an estimate is an estimate: InnoDB's is often off
// by a third); the rate once there was time enough to measure one.
func (p *scanLine) format(through bool) string {
	pct := ""
	switch {
	case p.estimate > 0 && through:
		pct = " (100%)"
	case p.estimate > 0:
		pct = fmt.Sprintf(" (~%d%%)", min(99, p.rows*100/p.estimate))
	}
	rate := ""
	if r := progress.Rate(p.rows-p.from, time.Since(p.start)); r > 0 {
		rate = fmt.Sprintf(", %.0f rows/s", r)
	}
	return fmt.Sprintf("%s: %d rows%s%s, %d chunks differ, %d keys to re-check", p.name, p.rows, pct, rate, p.differing, p.suspects)
}

// done writes the last state as the final line: the scan is through.
func (p *scanLine) done() {
	if p.line.Out != nil {
		p.line.Show(p.format(true), true)
	}
}
