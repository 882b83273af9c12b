package sinks

// SQL built once: every statement that applying a projection's batches
// needs is rendered for the sink's dialect the first time the sink meets
// the projection, into a statements value the apply path reads. A batch
// only appends its rows' placeholder groups to the fixed parts; nothing
// about a statement is derived again per batch. The exact text of every
// statement, for MariaDB and MySQL 8, is held in testdata/statements
// (statements_test.go).

import (
	"context"
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

// byPrimaryKey makes a locking read of rows by their keys a range of the
// primary key whatever the table's statistics say. On a table that is
// small or was just filled the optimizer prefers scanning a secondary
// index that covers the columns read (a children state's link, say), and
// a scan FOR UPDATE locks every row it passes: the transaction then waits
// on rows a concurrent one is writing, and holds the others. The hint is
// the same on MySQL and MariaDB.
const byPrimaryKey = " FORCE INDEX (PRIMARY)"

// keyIn is a statement matching rows of p's tables by key: head, then
// `c IN (?, …)` for one column or `(a, b) IN ((?, ?), …)` for more (cols
// as written, one placeholder group a key), then tail. The optimizer
// reads a long IN list as ranges of an index in about a third of the time
// it takes for the same keys as equalities joined by OR
// (bench/results/history/tuning-log.md, entry 49). A text column in
// another character set than utf8mb4 gets CONVERT(? USING <set>) in the
// list, and a column name p's tables define in two character sets, or as
// an ENUM or SET (whose IN list of rows the server reads by scanning the
// table), the equalities instead (keycharsets.go).
func keyIn(p *projections.Projection, head string, cols []string, tail string) multiRow {
	if len(cols) == 1 {
		return multiRow{head: head + cols[0] + " IN (", row: "?", sep: ", ", tail: ")" + tail}
	}
	places, byEqualities := keyPlaces(p, cols)
	if byEqualities {
		return multiRow{
			head: head + "(",
			row:  "(" + strings.Join(cols, ", ") + ") = (" + strings.Join(places, ", ") + ")",
			sep:  " OR ",
			tail: ")" + tail,
		}
	}
	return multiRow{
		head: head + "(" + strings.Join(cols, ", ") + ") IN (",
		row:  "(" + strings.Join(places, ", ") + ")",
		sep:  ", ",
		tail: ")" + tail,
	}
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
	// shareTruncation takes a shared lock on a truncation row before its
	// floor is read (shareTruncation in tombstone.go).
	shareTruncation string

	offsets, watermarks multiRow // offsets.go

	routing string // reads p's routing generation under a share lock (routing.go)

	joins    []joinStatements  // per p.Joins
	agg      *aggStatements    // aggregate_sql.go; nil unless p is an aggregate projection
	children []childStatements // per p.Children (children.go)
}

// joinStatements are the statements of one join (joinstate.go, fanout.go).
type joinStatements struct {
	lock          multiRow // exclusive: keys the batch changes
	share         multiRow // shared: keys only the batch's rows point at
	state         multiRow
	truncateState string
	truncateRead  string
	fanOut        multiRow
	fillRows      multiRow      // fanout.go
	via           viaStatements // joinvia.go; zero unless the join hangs off another
	// pending: fanout_background.go; zero unless the projection's fan-out
	// runs in the background.
	pending pendingStatements
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
	st.truncation, st.truncateRows, st.truncatedAt, st.shareTruncation = truncationStatements(p, d)
	st.offsets, st.watermarks = offsetStatement(d), watermarkStatement(d)
	st.routing = routingStatement(d)
	for _, j := range p.Joins {
		st.joins = append(st.joins, joinStatementsOf(p, j, d))
	}
	if p.Aggregation != nil {
		st.agg = aggStatementsOf(p, d)
	}
	for _, c := range p.Children {
		st.children = append(st.children, childStatementsOf(p, c, d))
	}
	return st
}

// statementsFor is p's statements on this sink, rendered at p's first
// batch, after the character sets of p's tables are known (keyIn); a
// projection reloaded under the same name gets its own.
func (s *MySQL) statementsFor(ctx context.Context, p *projections.Projection) (*statements, error) {
	if v, ok := s.statements.Load(p.Name); ok {
		if st := v.(*statements); st.p == p {
			return st, nil
		}
	}
	if err := s.learnSinkColumns(ctx, p); err != nil {
		return nil, err
	}
	st := newStatements(p, s.dialect)
	s.statements.Store(p.Name, st)
	return st, nil
}

// chunk is the most rows per multi-row statement.
const chunk = 500

// spans cuts n rows into statements of at most chunk rows and about
// limit bytes of parameters, so no statement outgrows the server's
// max_allowed_packet (the driver reports an oversized prepared statement
// as a bad connection, which would be retried forever).
func spans(n int, size func(i int) int, limit int) [][2]int {
	return cut(n, chunk, size, limit)
}

// cut cuts n items into runs of at most most items and about limit bytes.
func cut(n, most int, size func(i int) int, limit int) [][2]int {
	var out [][2]int
	start, bytes := 0, 0
	for i := range n {
		sz := size(i)
		if i > start && (i-start >= most || bytes+sz > limit) {
			out = append(out, [2]int{start, i})
			start, bytes = i, 0
		}
		bytes += sz
	}
	if start < n {
		out = append(out, [2]int{start, n})
	}
	return out
}

// argBytes estimates the bytes a row's parameters take on the wire.
func argBytes(vals []any) int {
	n := 16
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			n += len(x) + 9
		case []byte:
			n += len(x) + 9
		case *projections.Value:
			n += len(x.Bytes()) + 9
		default:
			n += 9
		}
	}
	return n
}

// valueBytes is argBytes of values.
func valueBytes(vals []projections.Value) int {
	n := 16
	for i := range vals {
		n += len(vals[i].Bytes()) + 9
	}
	return n
}

// appendValues appends a parameter for each of vals: a pointer into vals
// (no copy, no allocation per value), which the pipeline writes as a
// literal and database/sql reads through its driver.Valuer.
func appendValues(args []any, vals []projections.Value) []any {
	for i := range vals {
		args = append(args, &vals[i])
	}
	return args
}
