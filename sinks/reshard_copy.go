package sinks

// A reshard's copy: a table's rows read in primary-key chunks from one
// server and written to another with version-guarded upserts, so copying a
// chunk again (a rerun) or over rows a projector wrote since never moves
// a row back to an older version.

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/internal/keyset"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// Chunk is rows of one table read in primary-key order.
type Chunk struct {
	Columns []string
	Rows    [][]any // per row, per column: string (text), []byte (binary), uint64 (BIT) or nil (NULL)
	// IDs are the keyspace ids of the rows' shard_by values, as the
	// projector computes them (keyspace.ID of ShardValue); 0
	// without a shard column.
	IDs []uint64
	key []int // indexes of the key columns in Columns
}

// Len is the number of rows.
func (c *Chunk) Len() int { return len(c.Rows) }

// Last is the key of the last row, a cursor to read the next chunk after
// (EncodeCursor keeps it); nil when the chunk is empty.
func (c *Chunk) Last() []any {
	if len(c.Rows) == 0 {
		return nil
	}
	return c.Key(len(c.Rows) - 1)
}

// Key is row i's key values.
func (c *Chunk) Key(i int) []any {
	out := make([]any, len(c.key))
	for k, idx := range c.key {
		out[k] = c.Rows[i][idx]
	}
	return out
}

// Keep keeps the rows whose index keep accepts.
func (c *Chunk) Keep(keep func(i int) bool) {
	n := 0
	for i := range c.Rows {
		if keep(i) {
			c.Rows[n], c.IDs[n] = c.Rows[i], c.IDs[i]
			n++
		}
	}
	c.Rows, c.IDs = c.Rows[:n], c.IDs[:n]
}

// TableScan says which rows of a table ScanChunk reads.
type TableScan struct {
	Table string
	Key   []string // the primary key columns, in key order
	// Shard is the column whose value routes a row (shard_by); "" for none.
	Shard string
	// Where and its Args narrow the rows (bookkeeping tables: one
	// projection's); "" for every row.
	Where string
	Args  []any

	// sel is the select list (exactSelect; "" reads "*"), floats the
	// FLOAT columns it reads as doubles.
	sel    string
	floats map[string]bool
}

// ScanChunk reads up to limit rows of ts after the key after (nil: from
// the start), in key order. Values keep the server's text (a FLOAT's as
// a DOUBLE's, exactSelect), so writing them back to a table of the same
// definition stores what was read; a
// key read back (Chunk.Last) is bound as it was read (cellValue), so it
// compares as ORDER BY orders.
func (s *MySQL) ScanChunk(ctx context.Context, ts TableScan, after []any, limit int) (*Chunk, error) {
	var err error
	if ts.sel, ts.floats, err = s.exactSelect(ctx, ts.Table); err != nil {
		return nil, err
	}
	stmt, args := ts.chunkSQL(after, limit)
	return s.scan(ctx, ts, stmt, args)
}

// ScanKeys reads the rows of ts with the given keys.
func (s *MySQL) ScanKeys(ctx context.Context, ts TableScan, keys [][]any) (*Chunk, error) {
	var err error
	if ts.sel, ts.floats, err = s.exactSelect(ctx, ts.Table); err != nil {
		return nil, err
	}
	stmt, args := ts.keysSQL(keys)
	return s.scan(ctx, ts, stmt, args)
}

// exactSelect is the select list that reads every column of table so that
// writing the text back stores the same value: "*", or, when the table has
// a FLOAT column, each column by name with a FLOAT read as a DOUBLE (its
// six-digit text would store another float32: floatread.go). Read at each
// scan, a query that returns no row: a copy's tables may change columns
// while it runs.
func (s *MySQL) exactSelect(ctx context.Context, table string) (string, map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT * FROM "+q(table)+" LIMIT 0")
	if err != nil {
		return "", nil, fmt.Errorf("reading the columns of %s: %w", table, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return "", nil, fmt.Errorf("reading the columns of %s: %w", table, err)
	}
	cols := make([]string, len(types))
	var floats map[string]bool
	for i, t := range types {
		cols[i] = q(t.Name())
		if strings.EqualFold(t.DatabaseTypeName(), "FLOAT") {
			cols[i] = "(" + cols[i] + " + 0e0) AS " + cols[i]
			if floats == nil {
				floats = map[string]bool{}
			}
			floats[t.Name()] = true
		}
	}
	if floats == nil {
		return "*", nil, nil
	}
	return strings.Join(cols, ", "), floats, nil
}

// chunkSQL is ScanChunk's query: a keyset page of every column of ts's
// table, in key order.
func (ts TableScan) chunkSQL(after []any, limit int) (string, []any) {
	pg := ts.page(limit)
	if ts.Where != "" {
		pg.Where, pg.Args = []string{ts.Where}, ts.Args
	}
	return pg.SQL(after)
}

// keysSQL is ScanKeys' query.
func (ts TableScan) keysSQL(keys [][]any) (string, []any) {
	pg := ts.page(len(keys))
	c, a := keysIn(ts.Key, keys)
	pg.Where, pg.Args = []string{c}, a
	return pg.SQL(nil)
}

func (ts TableScan) page(limit int) keyset.Page {
	key := make([]string, len(ts.Key))
	for i, k := range ts.Key {
		key[i] = q(k)
	}
	sel := ts.sel
	if sel == "" {
		sel = "*"
	}
	return keyset.Page{Select: sel, From: q(ts.Table), Key: key, Limit: limit}
}

func (s *MySQL) scan(ctx context.Context, ts TableScan, stmt string, args []any) (*Chunk, error) {
	rows, err := s.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ts.Table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	c := &Chunk{Columns: cols}
	shard := -1
	for _, k := range ts.Key {
		idx := indexOf(cols, k)
		if idx < 0 {
			return nil, fmt.Errorf("%s has no key column %s", ts.Table, k)
		}
		c.key = append(c.key, idx)
	}
	if ts.Shard != "" {
		if shard = indexOf(cols, ts.Shard); shard < 0 {
			return nil, fmt.Errorf("%s has no shard_by column %s", ts.Table, ts.Shard)
		}
	}
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	kinds := make([]cellKind, len(cols))
	for i, t := range types {
		kinds[i] = kindOf(t.DatabaseTypeName())
	}
	var text []byte
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("reading %s: %w", ts.Table, err)
		}
		// The row's text cells share one string: one allocation a row,
		// not one a cell (a copy reads every row of its source shards).
		text = text[:0]
		for i, b := range raw {
			if kinds[i] == textCell {
				text = append(text, b...)
			}
		}
		all := string(text)
		row := make([]any, len(cols))
		for i, b := range raw {
			if kinds[i] == textCell && b != nil {
				row[i], all = all[:len(b)], all[len(b):]
				continue
			}
			row[i] = cellValue(kinds[i], b)
		}
		var id uint64
		if shard >= 0 {
			// The server's text of the value, or its bytes (binary, BIT):
			// what projections.ShardValue hashes.
			id = keyspace.ID(raw[shard])
			if ts.floats[cols[shard]] {
				id = keyspace.ID(projections.Float32ShardText(raw[shard]))
			}
		}
		c.Rows, c.IDs = append(c.Rows, row), append(c.IDs, id)
	}
	return c, rows.Err()
}

func indexOf(cols []string, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

// cellKind is how a column's cells are passed back to the server.
type cellKind uint8

const (
	textCell cellKind = iota
	binaryCell
	bitCell
	yearCell
)

// kindOf is the cellKind of a column of database type typ.
func kindOf(typ string) cellKind {
	switch t := strings.ToUpper(typ); {
	case t == "BIT":
		return bitCell
	case t == "YEAR":
		return yearCell
	case binaryType(t):
		return binaryCell
	}
	return textCell
}

// cellValue is a scanned cell as a parameter that stores it again: text
// as a string (the server converts it to the column's type as it would
// its own output), binary as bytes, BIT as its number.
func cellValue(kind cellKind, b sql.RawBytes) any {
	if b == nil {
		return nil
	}
	switch kind {
	case bitCell:
		var pad [8]byte
		copy(pad[8-min(len(b), 8):], b[max(len(b)-8, 0):])
		return binary.BigEndian.Uint64(pad[:])
	case binaryCell:
		return append([]byte{}, b...)
	case yearCell:
		return string(projections.YearText(b))
	}
	return string(b)
}

// keysIn is the condition "key is one of keys".
func keysIn(key []string, keys [][]any) (string, []any) {
	var args []any
	if len(key) == 1 {
		for _, k := range keys {
			args = append(args, k[0])
		}
		return q(key[0]) + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(keys)), ", ") + ")", args
	}
	var ors []string
	for _, k := range keys {
		var ands []string
		for i := range key {
			ands = append(ands, q(key[i])+" = ?")
			args = append(args, k[i])
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// Guard is a version column and the columns it guards: an upsert changes
// them only when the new row's version is higher (and sets the version to
// the higher of the two).
type Guard struct {
	Version string
	Columns []string
}

// UpsertChunk writes c's rows into table, each column group changed only
// where the new row's version of it is higher (guards; the columns no
// guard names, keys aside, go with the last guard). The version columns
// are assigned after the columns they guard: ON DUPLICATE KEY UPDATE
// assigns left to right and later assignments see earlier ones.
func (s *MySQL) UpsertChunk(ctx context.Context, table string, key []string, guards []Guard, c *Chunk) error {
	if c.Len() == 0 {
		return nil
	}
	d := s.dialect
	guarded := map[string]int{}
	for gi, g := range guards {
		guarded[strings.ToLower(g.Version)] = -1
		for _, col := range g.Columns {
			guarded[strings.ToLower(col)] = gi
		}
	}
	isKey := map[string]bool{}
	for _, k := range key {
		isKey[strings.ToLower(k)] = true
	}
	last := len(guards) - 1
	sets := make([][]string, len(guards))
	var cols []string
	for _, col := range c.Columns {
		cols = append(cols, q(col))
		lc := strings.ToLower(col)
		gi, ok := guarded[lc]
		if isKey[lc] || gi == -1 {
			continue
		}
		if !ok {
			gi = last
		}
		v := q(guards[gi].Version)
		sets[gi] = append(sets[gi], fmt.Sprintf("%[1]s = IF(%[2]s > %[3]s, %[4]s, %[1]s)", q(col), d.newRow(v), v, d.newRow(q(col))))
	}
	var all []string
	for gi, g := range guards {
		v := q(g.Version)
		all = append(all, sets[gi]...)
		all = append(all, fmt.Sprintf("%[1]s = GREATEST(%[1]s, %[2]s)", v, d.newRow(v)))
	}
	stmt := multiRow{
		head: "INSERT INTO " + q(table) + " (" + strings.Join(cols, ", ") + ") VALUES ",
		row:  "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")",
		sep:  ", ",
		tail: d.onDuplicate() + strings.Join(all, ", "),
	}
	size := func(i int) int {
		n := 16
		for _, v := range c.Rows[i] {
			switch v := v.(type) {
			case string:
				n += 2*len(v) + 4
			case []byte:
				n += 2*len(v) + 10
			default:
				n += 24
			}
		}
		return n
	}
	runs := spans(c.Len(), size, s.stmtLimit())
	// The statements are shared by upsertWriters transactions, each a run
	// of whole statements (disjoint keys); each is retried alone on a
	// deadlock or a lost connection: rewriting rows is harmless.
	g, gctx := errgroup.WithContext(ctx)
	per := (len(runs) + upsertWriters - 1) / upsertWriters
	for start := 0; start < len(runs); start += per {
		part := runs[start:min(start+per, len(runs))]
		g.Go(func() error {
			return retrying(gctx, func() error { return s.upsertSpans(gctx, &stmt, c, part) })
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("copying rows into %s: %w", table, err)
	}
	return nil
}

// upsertWriters is how many transactions UpsertChunk writes a chunk in at
// once: the copy's rate follows the server's, which a second connection
// raises on the test machine as it does B2's (docs/benchmarks.md).
const upsertWriters = 2

// upsertSpans runs stmt over the rows of c in the spans sp, in one
// transaction: one commit (and log flush) for the run, not one per
// statement.
func (s *MySQL) upsertSpans(ctx context.Context, stmt *multiRow, c *Chunk, sp [][2]int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit it does nothing
	for _, r := range sp {
		var args []any
		for _, row := range c.Rows[r[0]:r[1]] {
			args = append(args, row...)
		}
		if _, err := tx.ExecContext(ctx, stmt.text(r[1]-r[0]), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// DeleteKeys deletes the rows of table with the given keys.
func (s *MySQL) DeleteKeys(ctx context.Context, table string, key []string, keys [][]any) error {
	for start := 0; start < len(keys); start += 500 {
		part := keys[start:min(start+500, len(keys))]
		c, args := keysIn(key, part)
		if _, err := s.db.ExecContext(ctx, "DELETE FROM "+q(table)+" WHERE "+c, args...); err != nil {
			return fmt.Errorf("deleting moved rows from %s: %w", table, err)
		}
	}
	return nil
}

// EncodeCursor is a key (Chunk.Last) as text that survives JSON.
func EncodeCursor(key []any) []string {
	out := make([]string, len(key))
	for i, v := range key {
		switch v := v.(type) {
		case string:
			out[i] = "s" + v
		case []byte:
			out[i] = "b" + hex.EncodeToString(v)
		case uint64:
			out[i] = "n" + strconv.FormatUint(v, 10)
		default:
			out[i] = "0" // a NULL key column cannot be; sorts first
		}
	}
	return out
}

// DecodeCursor is EncodeCursor's key.
func DecodeCursor(text []string) ([]any, error) {
	if text == nil {
		return nil, nil
	}
	out := make([]any, len(text))
	for i, t := range text {
		if t == "" {
			return nil, fmt.Errorf("empty cursor value")
		}
		switch t[0] {
		case 's':
			out[i] = t[1:]
		case 'b':
			b, err := hex.DecodeString(t[1:])
			if err != nil {
				return nil, fmt.Errorf("cursor value %q: %w", t, err)
			}
			out[i] = b
		case 'n':
			n, err := strconv.ParseUint(t[1:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("cursor value %q: %w", t, err)
			}
			out[i] = n
		default:
			out[i] = nil
		}
	}
	return out, nil
}
