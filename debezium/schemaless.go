package debezium

// Reading Debezium's JSON records written without the schema block
// (the JSON converter's schemas.enable=false): a bare payload names its
// columns but not their types, and a value's encoding depends on the
// type. The types come from the source's live schema (information_schema
// over source.dsn) and the modes the writer ran with, which the user
// declares: each column's Connect schema is rebuilt exactly as the
// encoder (schema.go) writes it for that type and those modes, and read
// by the one mapping decode.go holds, so a bare payload and the same
// change with its schema block give equal events.
//
// Why the live schema rather than Debezium's schema history topic: the
// history topic is the connector's internal state (readside's own tailer
// writes none, and a connector may keep it elsewhere), and only its DDL
// text is stable across versions. The live schema is right for every
// record written after the table's last DDL; around a DDL:
//   - a column a record carries that the cached schema lacks (added since
//     the cache was read) makes Load read the schema again;
//   - a column dropped or renamed keeps the type held for it until the
//     columns are read again; after that, a record still carrying it
//     (written before the DDL) has it left out of its event, its type
//     unknown: a projection that reads it stops naming it, as for the DDL
//     itself;
//   - a column the record lacks (added after it was written) is not in
//     its event either;
//   - a column whose type changed in place (MODIFY) since a record still
//     unconsumed was written is decoded under the new type. Most changes
//     give a value of the wrong JSON kind, which stops the projection;
//     those that do not (DATETIME(3) to DATETIME(6), TIME under the
//     connect mode) are documented as needing the schema block.
//
// Fetching columns is I/O and decoding is not: Load reads the schemas a
// run of records needs before it is decoded, as AvroSchemas.Load does.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// ColumnSource reads a source table's columns, in table order, each with
// readside's type name as LiveColumn makes it. Columns blocks on the
// source; a table that does not exist is no columns and no error.
type ColumnSource interface {
	Columns(ctx context.Context, db, table string) ([]Column, error)
}

// ErrNoSuchTable is a bare payload of a table the source does not have.
var ErrNoSuchTable = errors.New("Debezium record of a table the source does not have")

// liveTable is one source table's columns as last read, compiled.
type liveTable struct {
	order []string          // column names in table order
	cols  map[string]column // by name
	types map[string]string // readside's type name by column
	errs  map[string]error  // columns whose type has no decoding
	// absent are names records carry that the last read did not find:
	// they do not make the next record read the schema again.
	absent map[string]bool
	shapes map[string]*shape // by the set of columns a record carries
}

// LiveSchemas holds the live schemas of the tables whose bare payloads a
// projection reads; it is safe for concurrent use.
type LiveSchemas struct {
	src   ColumnSource
	modes config.Debezium
	key   string // the config key holding modes, for errors

	mu     sync.Mutex
	tables map[[2]string]*liveTable
}

// NewLiveSchemas does no I/O: modes are the writer's value modes, key the
// config key that declares them.
func NewLiveSchemas(src ColumnSource, modes config.Debezium, key string) *LiveSchemas {
	return &LiveSchemas{src: src, modes: modes, key: key, tables: map[[2]string]*liveTable{}}
}

// bare is what Load reads of a record: a bare payload's table and column
// names, or the schema block that makes it no bare payload.
type bare struct {
	Schema json.RawMessage            `json:"schema"`
	Before map[string]json.RawMessage `json:"before"`
	After  map[string]json.RawMessage `json:"after"`
	Source *struct {
		DB    string `json:"db"`
		Table string `json:"table"`
	} `json:"source"`
}

// Load reads the columns of the tables values (record values, nil for a
// tombstone) name that are not held yet, or whose records carry a column
// the held schema lacks. A value it cannot read is left to Decode to
// refuse. The caller decodes none of values until a Load succeeds.
func (s *LiveSchemas) Load(ctx context.Context, values iter.Seq[[]byte]) error {
	need := map[[2]string]bool{}
	for v := range values {
		var b bare
		if v == nil || json.Unmarshal(v, &b) != nil || !isNull(b.Schema) || b.Source == nil {
			continue
		}
		tk := [2]string{b.Source.DB, b.Source.Table}
		if need[tk] {
			continue
		}
		s.mu.Lock()
		t := s.tables[tk]
		stale := t == nil || t.unknown(b.After) || t.unknown(b.Before)
		s.mu.Unlock()
		if stale {
			need[tk] = true
		}
	}
	tables := slices.Collect(maps.Keys(need))
	slices.SortFunc(tables, func(a, b [2]string) int { return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1])) })
	for _, tk := range tables {
		cols, err := s.src.Columns(ctx, tk[0], tk[1])
		if err != nil {
			return fmt.Errorf("reading the columns of %s.%s on the source, to decode its Debezium records written without the schema block: %w", tk[0], tk[1], err)
		}
		t := s.compile(cols)
		s.mu.Lock()
		if old := s.tables[tk]; old != nil {
			// Names no read found stay known as absent until a read
			// finds them.
			for n := range old.absent {
				if _, ok := t.cols[n]; !ok {
					t.absent[n] = true
				}
			}
		}
		s.tables[tk] = t
		s.mu.Unlock()
	}
	// Names the fresh read did not find either are absent from now on.
	for v := range values {
		var b bare
		if v == nil || json.Unmarshal(v, &b) != nil || !isNull(b.Schema) || b.Source == nil {
			continue
		}
		tk := [2]string{b.Source.DB, b.Source.Table}
		if !need[tk] {
			continue
		}
		s.mu.Lock()
		if t := s.tables[tk]; t != nil {
			t.markAbsent(b.After)
			t.markAbsent(b.Before)
		}
		s.mu.Unlock()
	}
	return nil
}

// unknown reports a column of img neither held nor known absent.
func (t *liveTable) unknown(img map[string]json.RawMessage) bool {
	for n := range img {
		if _, ok := t.types[n]; !ok && !t.absent[n] {
			return true
		}
	}
	return false
}

func (t *liveTable) markAbsent(img map[string]json.RawMessage) {
	for n := range img {
		if _, ok := t.types[n]; !ok {
			t.absent[n] = true
		}
	}
}

// compile compiles each column as the encoder's schema of it under s's
// modes, read back by compileField.
func (s *LiveSchemas) compile(cols []Column) *liveTable {
	t := &liveTable{cols: map[string]column{}, types: map[string]string{}, errs: map[string]error{},
		absent: map[string]bool{}, shapes: map[string]*shape{}}
	for _, c := range cols {
		t.order = append(t.order, c.Name)
		t.types[c.Name] = c.Type
		f, err := compile(Column{Name: c.Name, Type: c.Type, Optional: true, Members: c.Members}, s.modes)
		if err != nil {
			t.errs[c.Name] = err
			continue
		}
		var fs fieldSchema
		if err := json.Unmarshal(f.schema, &fs); err != nil {
			t.errs[c.Name] = err
			continue
		}
		cc, typ, err := compileField(fs)
		if err != nil {
			t.errs[c.Name] = err
			continue
		}
		t.cols[c.Name] = cc
		t.types[c.Name] = typ
	}
	return t
}

// shapeOf is the shape of a record of t carrying the columns of img: the
// live columns it carries, in table order.
func (t *liveTable) shapeOf(img map[string]json.RawMessage) (*shape, error) {
	var sig strings.Builder
	for i, n := range t.order {
		if _, ok := img[n]; ok {
			fmt.Fprintf(&sig, "%d,", i)
		}
	}
	if sh := t.shapes[sig.String()]; sh != nil {
		return sh, nil
	}
	sh := &shape{schema: &event.Schema{Columns: map[string]string{}}}
	var names []string
	var errs []error
	for _, n := range t.order {
		if _, ok := img[n]; !ok {
			continue
		}
		if err := t.errs[n]; err != nil {
			errs = append(errs, err)
			continue
		}
		sh.cols = append(sh.cols, t.cols[n])
		sh.schema.Columns[n] = t.types[n]
		names = append(names, n)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sh.layout = event.LayoutOf(names)
	if len(t.shapes) >= 64 {
		clear(t.shapes)
	}
	t.shapes[sig.String()] = sh
	return sh, nil
}

// shapeFor is the shape of payload p's row images, under the schema Load
// read for its table.
func (s *LiveSchemas) shapeFor(raw []byte) (*shape, error) {
	var b bare
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("decoding Debezium record: %w", err)
	}
	if b.Source == nil || b.Source.Table == "" {
		return nil, fmt.Errorf("Debezium record without the schema block and without source.db and source.table: readside reads the column types of the table they name. " +
			"Fix: enable the JSON converter's schema block (value.converter.schemas.enable=true)")
	}
	img := b.After
	if img == nil {
		img = b.Before
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[[2]string{b.Source.DB, b.Source.Table}]
	if t == nil {
		return nil, fmt.Errorf("Debezium record of %s.%s, whose columns were not read before decoding (readside's bug: report it)", b.Source.DB, b.Source.Table)
	}
	if len(t.order) == 0 {
		return nil, fmt.Errorf("%w: %s.%s is not on the source source.dsn names, and its record has no schema block to read its column types from. "+
			"Fix: point source.dsn at the database the connector captures, or enable the JSON converter's schema block (value.converter.schemas.enable=true)", ErrNoSuchTable, b.Source.DB, b.Source.Table)
	}
	sh, err := t.shapeOf(img)
	if err != nil {
		return nil, fmt.Errorf("Debezium record of %s.%s without the schema block: %w", b.Source.DB, b.Source.Table, err)
	}
	return sh, nil
}

// Decoder is a decoder of records whose tables' columns are loaded, for
// one run of records: not safe for concurrent use. A record that carries
// its schema block is read with it.
func (s *LiveSchemas) Decoder() *LiveDecoder {
	return &LiveDecoder{s: s}
}

// LiveDecoder reads Debezium's JSON change records with or without the
// schema block, the types of a bare payload's columns from LiveSchemas.
type LiveDecoder struct {
	s *LiveSchemas
	d Decoder
}

// Decode reads one record value (not a tombstone) into readside's event.
func (d *LiveDecoder) Decode(b []byte) (event.Event, error) {
	e, err := d.d.Decode(b)
	if !errors.Is(err, ErrNoSchema) {
		return e, err
	}
	sh, err := d.s.shapeFor(b)
	if err != nil {
		return event.Event{}, err
	}
	e, err = sh.decode(b)
	if err != nil {
		return e, fmt.Errorf("%w (its column types were read from the source's live schema under the modes %s declares: check they are the connector's)", err, d.s.key)
	}
	return e, nil
}

// Recycle is a no-op: the images share nothing the next event reuses.
func (d *LiveDecoder) Recycle(event.Event) {}

// LiveColumn is the Column of one information_schema.COLUMNS row
// (DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE,
// DATETIME_PRECISION, CHARACTER_MAXIMUM_LENGTH): readside's type name as
// the tailer names the column in its events, which is what the encoder
// compiles. A type readside does not capture is named so compile refuses
// it when a record carries the column.
func LiveColumn(name, dataType, colType string, prec, scale, dtPrec, maxLen int64) Column {
	c := Column{Name: name, Optional: true}
	dataType = strings.ToLower(dataType)
	frac := func(base string) string {
		if dtPrec > 0 {
			return fmt.Sprintf("%s(%d)", base, dtPrec)
		}
		return base
	}
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		c.Type = dataType
		if strings.Contains(strings.ToLower(colType), "unsigned") {
			c.Type += " unsigned"
		}
	case "real":
		c.Type = "double"
	case "decimal", "numeric":
		c.Type = fmt.Sprintf("decimal(%d,%d)", prec, scale)
	case "bit":
		c.Type = fmt.Sprintf("bit(%d)", prec)
	case "datetime", "timestamp", "time":
		c.Type = frac(dataType)
	case "binary":
		c.Type = fmt.Sprintf("binary(%d)", maxLen)
	case "tinyblob", "blob", "mediumblob", "longblob":
		c.Type = "blob"
	case "tinytext", "mediumtext", "longtext":
		c.Type = "text"
	default:
		// year, float, double, date, enum, set, json, char, varchar,
		// text, varbinary: the name is the type; the rest (geometry…)
		// is named as it is and refused by compile.
		c.Type = dataType
	}
	return c
}
