package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/readside/readside/config"
)

// FanOut is when a parent change reaches the read rows of the parent's
// other children (config `fan_out`).
type FanOut int

const (
	// FanOutInBatch copies a changed parent into every read row of it in
	// the batch's own transaction: when the batch commits, every row
	// shows it. A batch then costs as many row writes as the parents it
	// changes have children, which at a steady rate of changes to large
	// parents is what bounds how short batches can be.
	FanOutInBatch FanOut = iota
	// FanOutBackground applies the batch (the parents' state, the rows it
	// writes, filled from that state, and a durable note of each changed
	// parent) in its transaction, and copies each noted parent into its
	// other rows right after, in short transactions of their own that
	// take every change of the parent since its last copy at once
	// (docs/design/joins.md, "Fan-out in the background").
	FanOutBackground
)

func (f FanOut) String() string {
	if f == FanOutBackground {
		return "background"
	}
	return "in_batch"
}

// compileFanOut reads d's fan_out into p, after p's joins.
func compileFanOut(p *Projection, d config.Projection, key string) []error {
	switch d.FanOut {
	case "", "in_batch":
		return nil
	case "background":
	default:
		return []error{fmt.Errorf("%s.fan_out %q: want in_batch (the default) or background", key, d.FanOut)}
	}
	var errs []error
	if len(d.Join) == 0 {
		errs = append(errs, fmt.Errorf("%s.fan_out: background: the projection has no join, so there is no fan-out to move out of the batch: remove fan_out", key))
	}
	if d.Aggregated() {
		errs = append(errs, fmt.Errorf("%s.fan_out: background: an aggregate's group rows take their joined columns in the batch (their contributions come from it): remove fan_out", key))
	}
	if len(errs) == 0 {
		p.FanOut = FanOutBackground
	}
	return errs
}

// PendingTable is the table where join j's parent keys wait for their
// background fan-out (one row per parent changed and not yet copied).
func (j *Join) PendingTable(p *Projection) string {
	name := fmt.Sprintf("_readside_fanout_%s_%d", p.Name, j.N)
	if len(name) > 64 {
		name = fmt.Sprintf("_readside_fanout_%x_%d", xxhashString(p.Name), j.N)
	}
	return name
}

// FanOutRunner is a sink that runs a background fan-out: RunFanOuts
// copies p's changed parents into their read rows until ctx ends (nil),
// or returns the error of a copy that cannot succeed.
// After each round it calls observe (when set) with the parents still
// noted when the round began and the age of the oldest note.
type FanOutRunner interface {
	RunFanOuts(ctx context.Context, p *Projection, observe func(pending int64, oldest time.Duration)) error
}
