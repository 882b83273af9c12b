package sinks

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// textOnly is a batch's statement runner that only writes the statements'
// text, "; "-joined, as the pipeline does before sending it, from
// statements with placeholders and their parameters.
type textOnly struct{ buf []byte }

func (t *textOnly) exec(_ context.Context, query string, args []any) error {
	if len(t.buf) > 0 {
		t.buf = append(t.buf, "; "...)
	}
	var err error
	t.buf, err = appendStatement(t.buf, query, args)
	return err
}
func (t *textOnly) query(context.Context, string, []any) (*sql.Rows, error) { return nil, nil }
func (t *textOnly) check(ctx context.Context, query string, args []any, _ func(*sql.Rows) error) error {
	return t.exec(ctx, query, args)
}
func (t *textOnly) commit(context.Context) error { return nil }
func (t *textOnly) rollback()                    {}
func (t *textOnly) endReleasesLocks()            {}

// textDirect also takes statements written whole (textStmts), as the
// pipeline does.
type textDirect struct{ textOnly }

func (t *textDirect) execText(_ context.Context, _ int, write func([]byte) []byte) error {
	if len(t.buf) > 0 {
		t.buf = append(t.buf, "; "...)
	}
	t.buf = write(t.buf)
	return nil
}

// narrowProjection is the bench workload narrow_insert's projection.
func narrowProjection(tb testing.TB) *projections.Projection {
	cfg := config.Default()
	cfg.Source.Tables = []string{"src.narrow_insert"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"p_narrow_insert": {
		From: "src.narrow_insert", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "k": "k", "a": "a", "b": "b", "c": "c", "d": "d", "commit_us": "commit_us"},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return ps[0]
}

// TestUpsertTextDirect: an upsert written straight into the text (the
// pipeline's way) is byte for byte the statement with placeholders with
// its values written in, with and without MySQL 8's row alias, across
// statements split by the size limit, for every kind of value.
func TestUpsertTextDirect(t *testing.T) {
	p := narrowProjection(t)
	var ups []projections.Write
	for i := range 50 {
		vals := projections.ValuesOf(i, nil, uint64(1)<<63|uint64(i), "it's \\ \x00 ?", []byte{0, '\'', byte(i)}, "", "9.5")
		ups = append(ups, projections.Write{Kind: projections.Upsert, Key: strconv.Itoa(i), Values: vals, Version: uint64(1e18) + uint64(i)})
	}
	for _, d := range []dialect{mariaDB, mysql8} {
		st := newStatements(p, d)
		st.comment = "/* readside p?q */ " // a ? in the comment is no placeholder
		var viaParams textOnly
		direct := &textDirect{}
		for _, run := range []stmts{&viaParams, direct} {
			a := applier{ctx: context.Background(), run: run, p: p, st: st, limit: 2000}
			if err := a.upsert(ups); err != nil {
				t.Fatal(err)
			}
		}
		if n := strings.Count(string(viaParams.buf), "INSERT INTO"); n < 3 {
			t.Fatalf("%d statements: the limit should have split the batch", n)
		}
		if string(direct.buf) != string(viaParams.buf) {
			t.Errorf("row alias %v: written directly\n%s\nwith parameters\n%s", d.rowAlias, direct.buf, viaParams.buf)
		}
	}
}

// BenchmarkAppendUpsert is the sink's CPU per row outside the network and
// the server: a 5,000-row upsert of narrow rows (the bench workload
// narrow_insert's columns, values as Build makes them) written out as the
// statement text the pipeline sends (straight into the text, textStmts).
// Reported per row.
func BenchmarkAppendUpsert(b *testing.B) {
	p := narrowProjection(b)
	const n = 5000
	ups := make([]projections.Write, n)
	for i := range ups {
		id := strconv.Itoa(i + 1)
		byName := map[string]any{"id": id, "k": id, "a": "482211", "b": "name-" + id + "-2kq9x8v1r0s3", "c": "81234.55", "d": "2026-01-09 11:52:16.123456", "commit_us": "1780000000123456"}
		var vals []any
		for _, c := range p.Columns {
			vals = append(vals, byName[c.Source])
		}
		ups[i] = projections.Write{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(vals...), Version: uint64(1869683302580224001 + i)}
	}
	run := &textDirect{}
	a := applier{ctx: context.Background(), run: run, p: p, st: newStatements(p, mariaDB), limit: 32 << 20}
	b.ReportAllocs()
	for b.Loop() {
		run.buf = run.buf[:0]
		if err := a.upsert(ups); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
