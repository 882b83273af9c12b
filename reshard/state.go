package reshard

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/readside/readside/event"
	"github.com/readside/readside/sinks"
)

// The phases a reshard records in `_readside_reshards`, in order; a rerun
// resumes from the recorded one.
const (
	PhaseFilling    = "filling"
	PhaseCatchingUp = "catching-up"
	PhaseCutover    = "cutover"
	PhaseDone       = "done"
	PhaseClean      = "clean"
)

// Fill methods (--fill).
const (
	FillCopy   = "copy"
	FillTopics = "topics"
)

// FillSuffix names the fill identity: P's offsets and watermarks on the
// NEW shards are kept under P__reshard until the cutover makes them P's.
const FillSuffix = "__reshard"

// Progress is the JSON of `_readside_reshards.progress`: where each step
// is, so a rerun resumes, and what `readside status` shows.
type Progress struct {
	FromSink   string          `json:"from_sink"`
	FromRanges []string        `json:"from_ranges"`
	Fill       string          `json:"fill"`
	Pieces     []PieceProgress `json:"pieces"`
	RowsCopied int64           `json:"rows_copied"`
	RowsTotal  int64           `json:"rows_total"` // an estimate: the rows the copy reads (each source once per piece it feeds)
	RowsRead   int64           `json:"rows_read"`
	FillRate   float64         `json:"fill_rows_per_second,omitempty"`
	FenceMS    int64           `json:"fence_ms,omitempty"`
	// Clean is the cleanup's cursor per OLD server, and what it deleted.
	Clean       map[string][]string `json:"clean_cursors,omitempty"`
	CleanDone   map[string]bool     `json:"clean_done,omitempty"`
	RowsDeleted int64               `json:"rows_deleted,omitempty"`
	// Dropped are the OLD servers the cleanup dropped the projection
	// from (the new sink does not use them).
	Dropped []string `json:"dropped,omitempty"`
}

// PieceProgress is one piece's copy.
type PieceProgress struct {
	Piece
	Sources []SourceProgress `json:"sources"`
}

// SourceProgress is the copy of a piece from one OLD shard: the offsets
// read there before the first row (the catch-up starts from them), the
// key copied through, and whether it is finished.
type SourceProgress struct {
	From    int           `json:"from"`
	Offsets event.Offsets `json:"offsets,omitempty"`
	// OffsetsRead: Offsets were read (an empty set, when the source had
	// none, must not be read again later).
	OffsetsRead bool     `json:"offsets_read"`
	Cursor      []string `json:"cursor,omitempty"`
	Rows        int64    `json:"rows"`
	Done        bool     `json:"done"`
}

// store keeps the reshard's row on every server of NEW (the same row
// everywhere: any of them shows it).
type store struct {
	new   *sinks.Sharded
	state sinks.ReshardState
}

// save writes phase and progress on every server of NEW.
func (s *store) save(ctx context.Context, phase string, pr *Progress) error {
	b, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	s.state.Phase, s.state.Progress = phase, b
	seen := map[*sinks.MySQL]bool{}
	for _, sh := range s.new.Shards {
		if seen[sh.MySQL] {
			continue
		}
		seen[sh.MySQL] = true
		if err := sh.SetReshard(ctx, s.state); err != nil {
			return fmt.Errorf("shard %s of sink %s: %w", sh.Range.Text, s.new.Name, err)
		}
	}
	return nil
}

// Load reads projection's reshard row from the first server of sink that
// has one (nil: none), with its progress.
func Load(ctx context.Context, sink *sinks.Sharded, projection string) (*sinks.ReshardState, *Progress, error) {
	for _, sh := range sink.Shards {
		st, err := sh.Reshard(ctx, projection)
		if err != nil {
			return nil, nil, err
		}
		if st == nil {
			continue
		}
		var pr Progress
		if err := json.Unmarshal(st.Progress, &pr); err != nil {
			return nil, nil, fmt.Errorf("the reshard progress of %s: %w", projection, err)
		}
		return st, &pr, nil
	}
	return nil, nil, nil
}

// Active reports whether phase is one of a reshard not yet cut over.
func Active(phase string) bool {
	return phase == PhaseFilling || phase == PhaseCatchingUp || phase == PhaseCutover
}
