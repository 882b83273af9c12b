package shards

// Reading the source: the rows of a projection's source table in primary
// key order, in chunks (keyset pagination, so each query is short and no
// read view is held across the table). Each row's read columns are
// computed by their SQL (projections.Column.SQL) on the source, as verify
// computes them: the expression language's Go and MySQL values are equal
// by its contract, so the shard_by value is the one the projector
// computes. The where filter is computed there too, and a row it keeps
// out, or whose shard_by is NULL, makes no read row and is not counted.
// Queries run in the text protocol (interpolateParams), so every value
// arrives as MySQL's text for its type, which is what the projector
// hashes (projections.ShardValue); TIMESTAMPs are read in UTC as events
// carry them.
//
// A sample is every source row whose CRC32 of its primary key's text is
// 0 modulo Every: deterministic (the same rows each run), unrelated to
// the keyspace id (xxhash), and filtered on the server, so only the
// sampled rows cross the network (the server still reads every row).
// Every is the table's estimated row count (information_schema) over the
// wanted sample, so the sample holds about that many rows.

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/readside/readside/config"
	"github.com/readside/readside/internal/keyset"
	"github.com/readside/readside/internal/sourcedb"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// DefaultSample is the rows a sample aims at: shares measured on a
// million rows are within ±0.13 percentage points of the table's at three
// standard errors (3·√(¼·¾/10⁶) for a quarter share).
const DefaultSample = 1_000_000

// Options tune a scan.
type Options struct {
	// Sample is the rows to aim at (default DefaultSample); All reads
	// every row instead.
	Sample int
	All    bool
	// Chunk is the rows per query (default 5000).
	Chunk int
}

// SampleInfo says what a scan read.
type SampleInfo struct {
	All      bool  `json:"all"`
	Every    int64 `json:"every"`     // one source row in Every was read
	Estimate int64 `json:"estimate"`  // the table's estimated rows (information_schema)
	Read     int64 `json:"read"`      // source rows read
	Filtered int64 `json:"filtered"`  // read rows the where filter keeps out
	NullKeys int64 `json:"null_keys"` // read rows whose shard_by value is NULL
}

// OpenSource connects to the source as Scan needs: the text protocol,
// so every value arrives as MySQL's text for its type (what the projector
// hashes), and every reader's session settings (sourcedb).
// It connects as the tailer does: source.dsn with source.tls.
func OpenSource(src config.Source) (*sql.DB, error) {
	return sourcedb.Open(src.DSN.Reveal(), sourcedb.Options{MaxConns: 2, TextProtocol: true, TLS: src.TLS})
}

// Scan reads p's source rows (a sample, or all of them) and adds each
// read row to c, routed by by: p's shard_by column (p.Columns[0]) or any
// other column of p typed against the source (SourceColumns). p must
// have been typed against the source (projections.Projection.SourceColumns).
func Scan(ctx context.Context, db *sql.DB, p *projections.Projection, by projections.Column, opts Options, c *Counter) (SampleInfo, error) {
	if opts.Sample <= 0 {
		opts.Sample = DefaultSample
	}
	if opts.Chunk <= 0 {
		opts.Chunk = 5000
	}
	info := SampleInfo{All: opts.All, Every: 1}
	// A table keyed by source.keys is read in the order of those unique
	// NOT NULL columns.
	var err error
	pk := p.SourceKeyOf(p.SourceDB, p.SourceTbl)
	if pk == nil {
		if pk, err = primaryKey(ctx, db, p.SourceDB, p.SourceTbl); err != nil {
			return info, err
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(TABLE_ROWS), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		p.SourceDB, p.SourceTbl).Scan(&info.Estimate); err != nil {
		return info, fmt.Errorf("estimating the rows of %s.%s: %w", p.SourceDB, p.SourceTbl, err)
	}
	if !opts.All && info.Estimate > int64(opts.Sample) {
		info.Every = (info.Estimate + int64(opts.Sample) - 1) / int64(opts.Sample)
	}
	q, err := planScan(ctx, db, p, by, pk, info.Every, opts.Chunk)
	if err != nil {
		return info, err
	}
	err = keyset.Each(ctx, db, q.page, nil, func(rows *sql.Rows) (int, []any, error) {
		return q.readChunk(rows, &info, c)
	})
	if err != nil {
		return info, fmt.Errorf("reading %s.%s: %w", p.SourceDB, p.SourceTbl, err)
	}
	return info, nil
}

// scan is the keyset walk Scan makes over a source table: its query and
// where the walk stands.
type scan struct {
	page   keyset.Page
	width  int    // the shard_by column's BIT width, 0 when not a BIT
	last   []any  // the primary key of the last row read, nil before the first
	binary []bool // per primary key column: bound as bytes, not text
	cells  []sql.NullString
	dest   []any
}

// planScan builds the query that reads, per source row in primary key
// order, its key, its routed by value, its read row's size and whether
// p's filter passes it.
func planScan(ctx context.Context, db *sql.DB, p *projections.Projection, by projections.Column, pk []string, every int64, chunk int) (*scan, error) {
	width := 0
	if !by.Computed() {
		var err error
		if width, err = bitWidth(ctx, db, p.SourceDB, p.SourceTbl, by.Source); err != nil {
			return nil, err
		}
	}
	return newScan(p, by, width, pk, every, chunk), nil
}

// newScan is planScan's query once the by column's BIT width is known.
func newScan(p *projections.Projection, by projections.Column, width int, pk []string, every int64, chunk int) *scan {
	q := &scan{width: width}
	byCell := by.SQL(sourceColumn)
	if width > 0 {
		byCell = "(" + byCell + ") + 0" // a BIT's number: its pattern is routed
	}
	sizes := make([]string, len(p.Columns))
	for i, col := range p.Columns {
		sizes[i] = "IFNULL(LENGTH(CAST(" + col.SQL(sourceColumn) + " AS BINARY)), 0)"
	}
	where := "1"
	if p.Where != nil {
		where = "((" + p.Where.SQL(sourceColumn) + ") IS TRUE)"
	}
	pkCols := make([]string, len(pk))
	for i, k := range pk {
		pkCols[i] = sourceColumn(k)
	}
	q.page = keyset.Page{
		Select: strings.Join(pkCols, ", ") + ", " + byCell + ", " + strings.Join(sizes, " + ") + ", " + where,
		From:   sqlquote.Ident(p.SourceDB) + "." + sqlquote.Ident(p.SourceTbl) + " s",
		Key:    pkCols,
		Limit:  chunk,
	}
	if every > 1 {
		q.page.Where = []string{fmt.Sprintf("MOD(CRC32(CONCAT_WS(0x00, %s)), %d) = 0", strings.Join(pkCols, ", "), every)}
	}
	q.cells = make([]sql.NullString, len(pk)+3)
	q.dest = make([]any, len(q.cells))
	for i := range q.cells {
		q.dest[i] = &q.cells[i]
	}
	return q
}

// readChunk counts a chunk's rows into info and c, and returns how many
// it read and the key of the last one.
func (q *scan) readChunk(rows *sql.Rows, info *SampleInfo, c *Counter) (int, []any, error) {
	nk := len(q.page.Key)
	if q.binary == nil {
		var err error
		if q.binary, err = binaryColumns(rows, nk); err != nil {
			return 0, nil, err
		}
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(q.dest...); err != nil {
			return n, nil, err
		}
		n++
		info.Read++
		if q.last == nil {
			q.last = make([]any, nk)
		}
		for i := range nk {
			if q.binary[i] {
				q.last[i] = []byte(q.cells[i].String)
			} else {
				q.last[i] = q.cells[i].String
			}
		}
		value, size, pass := q.cells[nk], q.cells[nk+1], q.cells[nk+2]
		switch {
		case pass.String != "1":
			info.Filtered++
		case !value.Valid:
			info.NullKeys++
		default:
			bytes, _ := strconv.ParseInt(size.String, 10, 64)
			c.Add(routedValue(value.String, q.width), bytes)
		}
	}
	return n, q.last, nil
}

// routedValue is what the projector hashes for a shard_by cell read as
// text: the text itself, or a BIT's pattern in its width's bytes.
func routedValue(text string, bitWidth int) []byte {
	if bitWidth > 0 {
		u, _ := strconv.ParseUint(text, 10, 64)
		return projections.ShardValue(projections.ValueOf(u), bitWidth)
	}
	return []byte(text)
}

// binaryColumns says which of the first n result columns hold bytes: a
// key value read from one is bound back as bytes (_binary'…'), compared
// byte for byte, never read as a utf8mb4 string it is not (MariaDB 10.11
// pages a BINARY(16) key bound either way; the binding does not rest on
// that). Text is bound as text, so the column's collation orders it as
// ORDER BY does.
func binaryColumns(rows *sql.Rows, n int) ([]bool, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	out := make([]bool, n)
	for i := range out {
		t := strings.ToUpper(types[i].DatabaseTypeName())
		out[i] = strings.Contains(t, "BINARY") || strings.Contains(t, "BLOB")
	}
	return out, nil
}

func sourceColumn(name string) string { return "s." + sqlquote.Ident(name) }

func primaryKey(ctx context.Context, db *sql.DB, schema, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY'"+sourcedb.NotRowEnd("KEY_COLUMN_USAGE")+" ORDER BY ORDINAL_POSITION", schema, table)
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	var pk []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		pk = append(pk, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(pk) == 0 {
		return nil, fmt.Errorf("%s.%s has no primary key: readside cannot read it in order; add a primary key to the source table", schema, table)
	}
	return pk, nil
}

// bitWidth is n of a BIT(n) source column, 0 for any other type.
func bitWidth(ctx context.Context, db *sql.DB, schema, table, column string) (int, error) {
	var typ string
	var prec sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT DATA_TYPE, NUMERIC_PRECISION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
		schema, table, column).Scan(&typ, &prec)
	if err != nil {
		return 0, fmt.Errorf("reading the type of %s.%s.%s: %w", schema, table, column, err)
	}
	if strings.EqualFold(typ, "bit") {
		return int(prec.Int64), nil
	}
	return 0, nil
}
