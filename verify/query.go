package verify

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/readside/readside/internal/keyset"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// kind is how a column's value is bound, compared and routed; learned from
// the driver's column types.
type kind uint8

const (
	kText kind = iota
	kInt
	kNumber  // float, double: numeric text
	kDecimal // numeric text; a string in events
	kBinary
	kTemporal
	kBit
)

func kindOf(ct *sql.ColumnType) kind {
	t := strings.ToUpper(ct.DatabaseTypeName())
	switch {
	case t == "BIT":
		return kBit
	case strings.Contains(t, "INT") || t == "YEAR":
		return kInt
	case t == "DECIMAL":
		return kDecimal
	case t == "FLOAT" || t == "DOUBLE":
		return kNumber
	case strings.Contains(t, "BINARY") || strings.Contains(t, "BLOB") || t == "GEOMETRY":
		return kBinary
	case t == "DATE" || t == "DATETIME" || t == "TIMESTAMP" || t == "TIME":
		return kTemporal
	}
	return kText
}

// q is sqlquote.Ident under the short name the query builders use.
func q(ident string) string { return sqlquote.Ident(ident) }

// column is one compared read column and the source expression that
// computes it.
type column struct {
	Read string // read column
	Src  string // SQL over s (the source row) and jN (join N's parent)
}

// plan holds the SQL both sides run for one projection.
type plan struct {
	p    *projections.Projection
	cols []column // key first (p.Key order), then the rest, then joined columns
	// srcKey are the source columns of the read key, s-qualified.
	srcKey []string
	// readKey are the read key columns, quoted.
	readKey []string
	// whereSQL is the where filter over s, computed on the source
	// (expressions.go).
	whereSQL string
	// childKeys are the primary key columns of each children entry's
	// table (children.go), read from the source; nil before they are.
	childKeys [][]string
	// joinStart is the index in cols of the first joined column.
	joinStart int
	// floats marks the cols whose read column is a FLOAT (learnFloats),
	// which both sides read as a DOUBLE: the text protocol prints a FLOAT
	// with six significant digits (16777215 as 16777200), so two floats
	// that differ would hash and compare equal, and a key read as text
	// would match no row. Every float32 is a double, whose text is exact.
	floats []bool
}

func newPlan(p *projections.Projection, childKeys [][]string) *plan {
	if p.Aggregation != nil {
		return newAggregatePlan(p)
	}
	pl := &plan{p: p, childKeys: childKeys}
	for _, c := range p.Columns {
		pl.cols = append(pl.cols, column{Read: c.Name, Src: c.SQL(sourceColumn)})
	}
	pl.joinStart = len(pl.cols)
	for _, j := range p.Joins {
		for _, c := range j.Columns {
			pl.cols = append(pl.cols, column{Read: c.Name, Src: fmt.Sprintf("j%d.%s", j.N, q(c.Source))})
		}
	}
	pl.cols = append(pl.cols, pl.childColumns()...)
	for i, k := range p.Key {
		pl.srcKey = append(pl.srcKey, p.Columns[i].SQL(sourceColumn))
		pl.readKey = append(pl.readKey, q(k))
	}
	if p.Where != nil {
		pl.whereSQL = p.Where.SQL(sourceColumn)
	}
	return pl
}

// sourceFrom is the FROM clause computing the read rows from the source:
// the source table (optionally pre-filtered by the where expression in
// SQL) LEFT JOINed with every parent, a join through a parent's parent
// (via) on the columns of that parent's join, which precedes it.
func (pl *plan) sourceFrom(filtered, joins bool) string {
	p := pl.p
	from := q(p.SourceDB) + "." + q(p.SourceTbl) + " s"
	if p.Aggregation != nil {
		from = pl.groupsFrom()
	} else if filtered && p.Where != nil {
		// A derived table keeps the filter's bare column names on the
		// source table (a parent may have columns of the same name);
		// MariaDB and MySQL merge it into the outer query.
		from = "(SELECT * FROM " + q(p.SourceDB) + "." + q(p.SourceTbl) + " WHERE (" + p.Where.SQL(q) + ")) s"
	}
	if !joins || (p.Aggregation != nil && len(p.Aggregation.Joined) > 0) {
		return from
	}
	for _, j := range p.Joins {
		var on []string
		child := "s" // the source row, or the parent of the join this one hangs off
		if j.Via != nil {
			child = fmt.Sprintf("j%d", j.Via.N)
		}
		for _, o := range j.On {
			col := o.Child
			if j.Via == nil && p.Aggregation != nil {
				col = o.Read // the group rows' columns are read columns
			}
			on = append(on, fmt.Sprintf("j%d.%s = %s.%s", j.N, q(o.Parent), child, q(col)))
		}
		from += fmt.Sprintf(" LEFT JOIN %s.%s j%d ON %s", q(j.ParentDB), q(j.ParentTbl), j.N, strings.Join(on, " AND "))
	}
	return from
}

// rowHash is a 64-bit hash of one row's cells: each cell length-prefixed
// (NULL is 'N'), so no two different rows share a text. CAST AS BINARY
// gives a type's canonical text; read columns have the source's exact
// types, so equal values hash equally on both sides.
func rowHash(exprs []string) string {
	cells := make([]string, len(exprs))
	for i, e := range exprs {
		cells[i] = fmt.Sprintf("IFNULL(CONCAT(LENGTH(CAST(%[1]s AS BINARY)), ':', CAST(%[1]s AS BINARY)), 'N')", e)
	}
	return "CAST(CONV(LEFT(MD5(CONCAT(" + strings.Join(cells, ", ") + ")), 16), 16, 10) AS UNSIGNED)"
}

// checksumSelect aggregates a chunk: row count and the XOR of row hashes
// (order-free, so shards combine by XOR too).
func checksumSelect(exprs []string) string {
	return "SELECT COUNT(*), COALESCE(BIT_XOR(" + rowHash(exprs) + "), 0)"
}

func (pl *plan) srcExprs() []string {
	out := make([]string, len(pl.cols))
	for i, c := range pl.cols {
		out[i] = pl.exact(i, c.Src)
	}
	return out
}

func (pl *plan) readExprs() []string {
	out := make([]string, len(pl.cols))
	for i, c := range pl.cols {
		out[i] = pl.exact(i, q(c.Read))
	}
	return out
}

// srcKeyExprs are the source key columns as a SELECT reads them (srcKey
// is what WHERE and ORDER BY name, so the key's index serves them).
func (pl *plan) srcKeyExprs() []string {
	out := make([]string, len(pl.srcKey))
	for i, k := range pl.srcKey {
		out[i] = pl.exact(i, k) // the key leads cols
	}
	return out
}

// exact is expression e of column i as a SELECT reads it: a FLOAT as the
// same value as a DOUBLE (floats).
func (pl *plan) exact(i int, e string) string {
	if i < len(pl.floats) && pl.floats[i] {
		return "(" + e + " + 0e0)"
	}
	return e
}

// Key is a read key: its cells as text, as both sides print them.
type Key []string

func (k Key) text() string { return strings.Join(k, "\x00") }

// keyBinder turns key cells back into SQL parameters of the right type.
type keyBinder []kind

func (b keyBinder) bind(k Key) []any {
	out := make([]any, len(k))
	for i, c := range k {
		switch b[i] {
		case kInt:
			if n, err := strconv.ParseInt(c, 10, 64); err == nil {
				out[i] = n
			} else if u, err := strconv.ParseUint(c, 10, 64); err == nil {
				out[i] = u
			} else {
				out[i] = c
			}
		case kBit:
			out[i], _ = strconv.ParseUint(c, 10, 64)
		case kBinary:
			out[i] = []byte(c)
		default:
			out[i] = c
		}
	}
	return out
}

// keyIn is "key IN (keys)" as ORs of equalities.
func keyIn(cols []string, keys []Key, b keyBinder) (string, []any) {
	var ors []string
	var args []any
	for _, k := range keys {
		var ands []string
		for _, c := range cols {
			ands = append(ands, c+" = ?")
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
		args = append(args, b.bind(k)...)
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// rangeWhere is the chunk (lo, hi]: lo nil is the start, hi nil the end.
// The key cells are bound by their kind (keyBinder), so a text key
// compares under its column's collation as ORDER BY orders it, and a
// binary one byte for byte.
func rangeWhere(cols []string, b keyBinder, lo, hi Key) (string, []any) {
	var conds []string
	var args []any
	if lo != nil {
		c, a := keyset.After(cols, b.bind(lo))
		conds, args = append(conds, c), append(args, a...)
	}
	if hi != nil {
		c, a := keyset.AtMost(cols, b.bind(hi))
		conds, args = append(conds, c), append(args, a...)
	}
	if len(conds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(conds, " AND "), args
}

// literal renders a value for the WHERE of a snapshot request (plain SQL
// text the tailer runs): numbers as written, text as a hex literal of its
// UTF-8 bytes under the _utf8mb4 introducer, bytes as a hex literal. An
// introduced literal is coercible, so the column's character set and
// collation win: the literal is converted to them and the column's index
// is used. A CONVERT(… USING utf8mb4) instead ranks with the column: the
// server then converts a non-Unicode column to utf8mb4 (no index) and
// refuses a ucs2, utf16 or utf32 one (error 1267, illegal mix).
func literal(k kind, v string) string {
	switch k {
	case kInt, kNumber, kDecimal, kBit:
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return v
		}
	case kBinary:
		return "X'" + hex.EncodeToString([]byte(v)) + "'"
	}
	if v == "" {
		return "''"
	}
	return "_utf8mb4 X'" + hex.EncodeToString([]byte(v)) + "'"
}

// shardValue is the bytes a shard_by cell is routed by
// (projections.ShardValue): the cell's text or bytes as scanned, but a BIT
// cell, a number here, as its pattern in bitWidth's bytes.
func shardValue(k kind, v string, bitWidth int) []byte {
	if k == kBit {
		u, _ := strconv.ParseUint(v, 10, 64)
		return projections.ShardValue(projections.ValueOf(u), bitWidth)
	}
	return []byte(v)
}
