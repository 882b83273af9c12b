package projections

import (
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
)

// computedSource is a source table for typing computed columns without a
// server: what readSourceTable reads from information_schema.
func computedSource() *sourceTable {
	return &sourceTable{
		types: map[string]string{"id": "bigint(20)", "sender_id": "int(11)", "score": "int(11)", "i-j": "int(11)",
			"status": "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "created_at": "datetime(6)"},
		nullable: map[string]bool{"score": true},
		pk:       []string{"id"},
		columns:  []string{"id", "sender_id", "score", "i-j", "status", "created_at"},
	}
}

// computedConfig is the messages projection with a computed month key.
func computedConfig() config.Config {
	cfg := baseConfig()
	cfg.Projections = map[string]config.Projection{"by_month": {
		From: "chat.messages", Sink: "reads", Key: []string{"sender_id", "month", "id"}, ShardBy: "sender_id",
		Columns: map[string]string{"sender_id": "sender_id", "month": "CAST(created_at AS CHAR(7))", "id": "id",
			"score2": "score * 2", "lane": "CASE WHEN status = 'urgent' THEN 'hot' ELSE 'cold' END"},
	}}
	return cfg
}

// TestCompileComputedErrors: every broken computed column or override is
// reported at once, each naming the projection, the column, the
// expression, the position and the fix.
func TestCompileComputedErrors(t *testing.T) {
	cfg := computedConfig()
	d := cfg.Projections["by_month"]
	d.Columns["month"] = "CAST(created_at AS CHAR(7)"          // unclosed call: refused at Compile
	d.Columns["body"] = "COALESCE(score, 0) * (2 +"            // ends too early
	d.Columns["lane"] = "IF(status = 'x', 1, 2, 3)"            // too many arguments
	d.ColumnTypes = map[string]string{"id": "bigint unsigned", // a copy takes its source's type
		"ghost":  "int",              // no such column
		"score2": "char(4) NOT NULL", // nullability is inferred
	}
	cfg.Projections["by_month"] = d
	_, err := Compile(cfg)
	if err == nil {
		t.Fatal("broken computed columns compiled")
	}
	for _, want := range []string{
		`projections.by_month.columns.month "CAST(created_at AS CHAR(7)": at offset`,
		`projections.by_month.columns.body "COALESCE(score, 0) * (2 +": at offset 25: `,
		`projections.by_month.columns.lane "IF(status = 'x', 1, 2, 3)": at offset`,
		"projections.by_month.column_types.id: id copies source column id, whose type the read column takes exactly: remove the override",
		"projections.by_month.column_types.ghost: ghost is not in projections.by_month.columns",
		`projections.by_month.column_types.score2 "char(4) NOT NULL": it contains NULL: give a MySQL column type`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("compile errors lack %q:\n%v", want, err)
		}
	}
}

// TestTypeComputed: computed columns take the expression's type (or the
// override) against the source columns, nullability included; a key must
// not be NULL-able; a value naming a source column exactly copies it.
func TestTypeComputed(t *testing.T) {
	cases := []struct {
		why      string
		value    string
		override string
		key      bool
		where    string
		want     string // read column definition, or the error's fragment
		copy     bool
	}{
		{"a cast gives its exact type", "CAST(created_at AS CHAR(7))", "", true, "", "varchar(7) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL", false},
		{"a nullable source column makes a nullable value", "score * 2", "", false, "", "bigint(12) NULL", false},
		{"a nullable key is refused with the fix", "score * 2", "", true, "", "can be NULL", false},
		{"COALESCE makes it a key", "COALESCE(score, 0) * 2", "", true, "", "bigint(12) NOT NULL", false},
		{"a key typed nullable only by its operator (DIV) is NOT NULL", "id DIV 2", "", true, "", "bigint(19) NOT NULL", false},
		{"the same as a plain column keeps MySQL's nullability", "id DIV 2", "", false, "", "bigint(19) NULL", false},
		{"a key over a nullable column names it and the fix", "CASE WHEN score > 1 THEN 'a' ELSE 'b' END", "", true, "", `reads nullable source column(s) score, and a read key cannot be NULL: wrap it in COALESCE(…, <default>), or add where: "score IS NOT NULL"`, false},
		{"a filter that keeps NULL out makes it a key", "score * 2", "", true, "score IS NOT NULL", "bigint(12) NOT NULL", false},
		{"the override replaces the inferred type, not the nullability", "score / 8", "decimal(12,4)", false, "", "decimal(12,4) NULL", false},
		{"a missing column is named with the table's columns", "nope + 1", "", false, "", `column "nope" is not in the source table: name one of its columns (its columns: id, sender_id`, false},
		{"a value naming a source column exactly copies it", "i-j", "", false, "", "", true},
		{"a value neither a column nor an expression says both", "a b", "", false, "", "neither a source column (its columns: id", false},
	}
	for _, c := range cases {
		col, err := compileColumn("v", c.value, c.override)
		if err != nil {
			t.Fatalf("%s: compileColumn: %v", c.why, err)
		}
		p := &Projection{Name: "p"}
		if c.where != "" {
			if p.Where, err = compileWhere(c.where); err != nil {
				t.Fatal(err)
			}
		}
		def, err := p.typeComputed(col, computedSource(), c.key)
		switch {
		case c.copy:
			if err != errCopy || col.Computed() {
				t.Errorf("%s: %q: error %v, computed %v; want a copy", c.why, c.value, err, col.Computed())
			}
		case err != nil:
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %q: error %v, want %q", c.why, c.value, err, c.want)
			}
		case def != c.want:
			t.Errorf("%s: %q: %q, want %q", c.why, c.value, def, c.want)
		}
	}
}

// typeAll types p's computed columns and filter against src, as
// SourceColumns does with the live source.
func typeAll(t testing.TB, p *Projection, src *sourceTable) {
	t.Helper()
	for i, c := range p.Columns {
		if c.typed == nil {
			continue
		}
		if _, err := p.typeComputed(c, src, i < len(p.Key)); err != nil && err != errCopy {
			t.Fatalf("column %s: %v", c.Name, err)
		}
	}
	if err := p.Where.typeExpr(src); err != nil {
		t.Fatal(err)
	}
}

// compileComputed compiles d as computedConfig's projection and types it
// against computedSource.
func compileComputed(t *testing.T, d config.Projection) *Projection {
	t.Helper()
	cfg := computedConfig()
	cfg.Projections["by_month"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	typeAll(t, ps[0], computedSource())
	return ps[0]
}

// computedEvent is an update of a messages row from before to after
// (JSON objects of the changed members over a base row).
func computedEvent(t *testing.T, before, after string) event.Event {
	t.Helper()
	const base = `"id":1,"sender_id":7,"i-j":3,"body":"x"`
	e, err := event.DecodeEvent([]byte(`{"op":"u","version":42,"before":{` + base + `,` + before + `},"after":{` + base + `,` + after + `},
		"schema":{"version":"x","columns":{"id":"bigint","sender_id":"int","score":"int","i-j":"int","status":"varchar","created_at":"datetime"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestWritesComputedKeyMoves: an update that changes a computed key value
// (a month bucket, a CASE lane) deletes the old read row and writes the
// new one at the same version; one that leaves them is one upsert; rows
// enter and leave an expression filter; a value that cannot be computed
// is an error naming the column and the expression.
func TestWritesComputedKeyMoves(t *testing.T) {
	cfg := computedConfig()
	d := cfg.Projections["by_month"]
	d.Key = []string{"sender_id", "month", "lane", "id"}
	d.Where = "COALESCE(score, 0) * 2 < 150"
	d.Columns["big"] = "id * 4611686018427387904"
	p := compileComputed(t, d)
	const jan, feb = `"created_at":"2026-01-31 23:59:59.999999"`, `"created_at":"2026-02-01 00:00:00.000000"`
	const urgent, low, fine = `"status":"urgent"`, `"status":"low"`, `"score":10`
	cases := []struct {
		why           string
		before, after string
		want          []WriteKind
		monthValues   []string // the month column's bound values, per write
		err           string
	}{
		{"created_at across a month boundary moves the row", jan + "," + urgent + "," + fine, feb + "," + urgent + "," + fine, []WriteKind{Delete, Upsert}, []string{"2026-01", "2026-02"}, ""},
		{"a status change that flips the CASE lane moves the row", jan + "," + urgent + "," + fine, jan + "," + low + "," + fine, []WriteKind{Delete, Upsert}, []string{"2026-01", "2026-01"}, ""},
		{"a change within the bucket and lane is one upsert", jan + "," + urgent + "," + fine, `"created_at":"2026-01-02 00:00:00.000000",` + urgent + `,"score":11`, []WriteKind{Upsert}, []string{"2026-01"}, ""},
		{"leaving the expression filter deletes", jan + "," + urgent + "," + fine, jan + "," + urgent + `,"score":75`, []WriteKind{Delete}, []string{"2026-01"}, ""},
		{"entering the expression filter upserts", jan + "," + urgent + `,"score":null`, jan + "," + urgent + `,"score":74`, []WriteKind{Upsert}, []string{"2026-01"}, ""},
		{"NULL passes through COALESCE into the filter", jan + "," + urgent + `,"score":200`, jan + "," + urgent + `,"score":null`, []WriteKind{Upsert}, []string{"2026-01"}, ""},
	}
	for _, c := range cases {
		ws, err := p.Writes(computedEvent(t, c.before, c.after))
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		var kinds []WriteKind
		var months []string
		for _, w := range ws {
			kinds = append(kinds, w.Kind)
			months = append(months, string(w.Values[1].Bytes()))
			if w.Version != 42 {
				t.Errorf("%s: version %d, want the event's", c.why, w.Version)
			}
			if w.KeyspaceID != keyspace.ID([]byte("7")) {
				t.Errorf("%s: keyspace id %x, want sender 7's", c.why, w.KeyspaceID)
			}
		}
		if !slices.Equal(kinds, c.want) || !slices.Equal(months, c.monthValues) {
			t.Errorf("%s: writes %v months %q, want %v %q", c.why, kinds, months, c.want, c.monthValues)
		}
		if len(ws) == 2 && ws[0].Key == ws[1].Key {
			t.Errorf("%s: a move with one key text %q", c.why, ws[0].Key)
		}
	}
	// id * 2^62 overflows BIGINT for id 2: the row cannot be mapped.
	e := computedEvent(t, jan+","+urgent+","+fine, jan+","+urgent+",\"score\":12")
	after := e.After.Map()
	after["id"] = []byte("2")
	e.After = event.ImageOf(after)
	if _, err := p.Writes(e); err == nil || !strings.Contains(err.Error(), `projections.by_month.columns.big "id * 4611686018427387904" cannot be computed for this row`) {
		t.Errorf("BIGINT overflow: error %v, want one naming the column and the expression", err)
	}
}

// TestWritesComputedKeyNull: a key over NOT NULL columns that MySQL types
// nullable is accepted, and a row it is NULL for is refused naming the
// column, the expression and the fix (the caller stops or dead-letters).
func TestWritesComputedKeyNull(t *testing.T) {
	cfg := computedConfig()
	d := cfg.Projections["by_month"]
	d.Columns["month"] = "sender_id DIV (id - 1)" // NULL for id 1: division by zero
	p := compileComputed(t, d)
	e := computedEvent(t, `"created_at":"2026-01-01 00:00:00.000000","status":"x","score":1`, `"created_at":"2026-01-01 00:00:00.000000","status":"x","score":2`)
	if _, err := p.Writes(e); err == nil || !strings.Contains(err.Error(), `key column "month" = sender_id DIV (id - 1) is NULL for this row: a read key cannot be NULL; wrap it in COALESCE`) {
		t.Errorf("NULL computed key: error %v", err)
	}
}
