package projections

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
)

// Children is one `children` entry: a JSON array read column of the
// parent's read row that nests the child rows pointing at it (one object
// per child, ordered, capped), and a count column of all of them. Each
// child row's last state is kept on the sink like a contribution, and the
// arrays of the parents a batch touches are rebuilt from it in the same
// transaction (docs/ARCHITECTURE.md, "Nested children").
type Children struct {
	Name        string // the JSON array read column
	CountColumn string // Name + "_count"
	SourceDB    string
	SourceTbl   string
	Topic       string
	// On pairs each child column with the parent's read column holding
	// the parent source column it matches.
	On      []ChildOn
	Columns []Column // the members of each element, by read name
	OrderBy []string // child columns; ties broken by the child's primary key
	Limit   int      // 0: no cap
}

// ChildOn is one pair of Children.On.
type ChildOn struct {
	Child  string // child source column
	Parent string // parent source column
}

// ChildWrite is one child row change: its new state under its own source
// key, applied by the sink only when Version is newer than the stored one.
type ChildWrite struct {
	Child     int    // index into Projection.Children
	SourceKey string // canonical text of the child's primary key
	Version   uint64
	// Truncate: every child state older than Version is withdrawn.
	Truncate bool
	From     *kgo.Record
}

// compileChildren compiles `children` (nil errors when there are none).
func compileChildren(cfg config.Config, p *Projection, d config.Projection, key string, captured map[string]bool) []error {
	return nil
}

// collectChild adds the effect of an event of child table i to b.
func (p *Projection) collectChild(b *Batch, i int, r *kgo.Record, e Event) error { return nil }
