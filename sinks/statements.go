package sinks

// SQL built once: every statement that applying a projection's batches
// needs is rendered for the sink's dialect the first time the sink meets
// the projection, into a statements value the apply path reads. A batch
// only appends its rows' placeholder groups to the fixed parts; nothing
// about a statement is derived again per batch. The exact text of every
// statement, for MariaDB and MySQL 8, is held in testdata/statements
// (statements_test.go).

import (
	"strings"

	"github.com/readside/readside/projections"
)

// multiRow is a statement of as many rows as a batch part holds: head,
// row, then sep and row for each further row, and tail.
type multiRow struct{ head, row, sep, tail string }

// text is the statement for n rows (n ≥ 1).
func (m *multiRow) text(n int) string {
	var b strings.Builder
	b.Grow(len(m.head) + len(m.row) + (n-1)*(len(m.sep)+len(m.row)) + len(m.tail))
	b.WriteString(m.head)
	b.WriteString(m.row)
	for range n - 1 {
		b.WriteString(m.sep)
		b.WriteString(m.row)
	}
	b.WriteString(m.tail)
	return b.String()
}

// statements are the statements of one projection on one dialect.
type statements struct {
	p       *projections.Projection // the projection they were rendered for
	comment string                  // opens every statement: whose it is, in the server's process list and logs

	upsert        multiRow // version_guard.go
	lenientUpsert multiRow // upsert without strict mode (enumzero.go)

	tombstones      multiRow // tombstone.go
	tombstoneLookup multiRow
	// firstLookup is tombstoneLookup that also reads the truncation
	// floor (one round trip less per batch).
	firstLookup multiRow
	deleteRows  multiRow

	truncation   string // records a truncation's version (read table or a join's parent)
	truncateRows string
	truncatedAt  string

	offsets, watermarks multiRow // offsets.go

	joins []joinStatements // per p.Joins
}

// joinStatements are the statements of one join (joinstate.go, fanout.go).
type joinStatements struct {
	lock          multiRow
	state         multiRow
	truncateState string
	truncateRead  string
	fanOut        multiRow
}

// newStatements renders every statement of p for d.
func newStatements(p *projections.Projection, d dialect) *statements {
	st := &statements{
		p:       p,
		comment: "/* readside " + strings.ReplaceAll(p.Name, "*/", "") + " */ ",
		upsert:  upsertStatement(p, d),
	}
	st.lenientUpsert = st.upsert
	st.lenientUpsert.head = lenientPrefix + st.upsert.head
	st.tombstones, st.tombstoneLookup, st.firstLookup, st.deleteRows = tombstoneStatements(p, d)
	st.truncation, st.truncateRows, st.truncatedAt = truncationStatements(p, d)
	st.offsets, st.watermarks = offsetStatement(d), watermarkStatement(d)
	for _, j := range p.Joins {
		st.joins = append(st.joins, joinStatementsOf(p, j, d))
	}
	return st
}

// statementsFor is p's statements on this sink, rendered at p's first
// batch; a projection reloaded under the same name gets its own.
func (s *MySQL) statementsFor(p *projections.Projection) *statements {
	if v, ok := s.statements.Load(p.Name); ok {
		if st := v.(*statements); st.p == p {
			return st
		}
	}
	st := newStatements(p, s.dialect)
	s.statements.Store(p.Name, st)
	return st
}
