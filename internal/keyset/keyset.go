// Package keyset reads a table in key order a page at a time: each query
// reads the rows after the last key the one before read,
// "(key) > (last) ORDER BY key LIMIT n". Every query is short and starts
// in the key's index, and no read view is held across the table, where
// OFFSET would reread what it skips and one SELECT would hold its view to
// the end.
//
// The tuple comparison is spelled out as ORs ((a > ?) OR (a = ? AND
// b > ?)), not written as a row constructor: both compare alike, but not
// every MariaDB and MySQL version's range optimizer turns a row
// constructor into an index range. The key must hold no NULL (a primary
// key, or source.keys' unique NOT NULL columns): NULL is neither greater
// nor equal, so a row keyed by one would never be read.
//
// How a key value is bound decides how it compares, and it must compare
// as ORDER BY orders: text bound as a string compares under the column's
// collation (a _ci key's 'a' and 'A' are equal, as they sort), bytes
// bound as []byte compare byte for byte (a BINARY key is never read as a
// utf8mb4 string it is not). Each caller binds the key it read back the
// way it read it; keyset only places the values, and writes into the
// statement only an integer key's integers (Page.IntegerKey).
package keyset

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// After is the condition "(cols) > (vals)"; cols are SQL expressions
// (quoted columns), vals their values, bound in the order of the args.
func After(cols []string, vals []any) (string, []any) {
	return compare(cols, vals, nil, ">", ">")
}

// AtMost is the condition "(cols) <= (vals)", the upper end of a chunk
// (lo, hi] whose lower end is After.
func AtMost(cols []string, vals []any) (string, []any) {
	return compare(cols, vals, nil, "<", "<=")
}

// compare is the tuple comparison spelled out: a column's strict
// comparison after equal leading columns, and last for the last column.
// With lits, the values are written as those literals instead of bound.
func compare(cols []string, vals []any, lits []string, strict, last string) (string, []any) {
	ors := make([]string, 0, len(cols))
	var args []any
	if lits == nil {
		args = make([]any, 0, len(cols)*(len(cols)+1)/2)
	}
	value := func(j int) string {
		if lits != nil {
			return lits[j]
		}
		args = append(args, vals[j])
		return "?"
	}
	for i := range cols {
		ands := make([]string, 0, i+1)
		for j := range i {
			ands = append(ands, cols[j]+" = "+value(j))
		}
		op := strict
		if i == len(cols)-1 {
			op = last
		}
		ands = append(ands, cols[i]+" "+op+" "+value(i))
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// integers are vals as the integer literals they are, or nil when one is
// not a decimal integer (read as text, or a Go integer) and must be bound.
func integers(vals []any) []string {
	lits := make([]string, len(vals))
	for i, v := range vals {
		var s string
		switch v := v.(type) {
		case []byte:
			s = string(v)
		case string:
			s = v
		case int64:
			s = strconv.FormatInt(v, 10)
		case uint64:
			s = strconv.FormatUint(v, 10)
		case int:
			s = strconv.Itoa(v)
		default:
			return nil
		}
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			if _, err := strconv.ParseUint(s, 10, 64); err != nil {
				return nil
			}
		}
		lits[i] = s
	}
	return lits
}

// Page is a keyset query's fixed parts.
type Page struct {
	Select string   // the select list
	From   string   // the table expression
	Key    []string // the key's SQL expressions: the order and the keyset condition
	// Where are further conditions, each parenthesized and ANDed before
	// the keyset condition; Args are their parameters in order.
	Where []string
	Args  []any
	Limit int // rows per page
	// Offset skips rows before the page: a chunk's boundary is read as
	// the one row at Offset chunk-1.
	Offset int
	// IntegerKey says every key column is an integer column: a key whose
	// values are all decimal integers is then written into the statement
	// instead of bound. A statement without parameters is not prepared
	// first (one round trip fewer) and its rows come in the text
	// protocol. A value that is no integer (a damaged checkpoint) is bound
	// like any other, never written into SQL. Only for integer columns: a
	// text column compared with an integer literal compares as a number.
	IntegerKey bool
}

// SQL is the page of rows after the key after (nil: from the first row).
func (p Page) SQL(after []any) (string, []any) {
	conds := make([]string, 0, len(p.Where)+1)
	for _, w := range p.Where {
		conds = append(conds, "("+w+")")
	}
	args := append([]any(nil), p.Args...)
	if after != nil {
		var lits []string
		if p.IntegerKey {
			lits = integers(after)
		}
		c, a := compare(p.Key, after, lits, ">", ">")
		conds, args = append(conds, c), append(args, a...)
	}
	var b strings.Builder
	b.WriteString("SELECT " + p.Select + " FROM " + p.From)
	if len(conds) > 0 {
		b.WriteString(" WHERE " + strings.Join(conds, " AND "))
	}
	b.WriteString(" ORDER BY " + strings.Join(p.Key, ", ") + " LIMIT " + strconv.Itoa(p.Limit))
	if p.Offset > 0 {
		b.WriteString(" OFFSET " + strconv.Itoa(p.Offset))
	}
	return b.String(), args
}

// Querier is what Each reads through: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Each reads p's pages after the key from (nil: from the first row) until
// one comes back short of p.Limit. read scans one page's rows and returns
// how many it read and the key of the last one, bound as the next page
// compares it (the package comment); Each closes the rows.
func Each(ctx context.Context, db Querier, p Page, from []any, read func(*sql.Rows) (n int, last []any, err error)) error {
	after := from
	for {
		query, args := p.SQL(after)
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, last, err := read(rows)
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			return err
		}
		if n < p.Limit || last == nil {
			return nil
		}
		after = last
	}
}
