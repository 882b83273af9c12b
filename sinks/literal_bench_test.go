package sinks

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// textOnly is a batch's statement runner that only writes the statements'
// text, as the pipeline does before sending it.
type textOnly struct{ buf []byte }

func (t *textOnly) exec(_ context.Context, query string, args []any) error {
	var err error
	t.buf, err = appendStatement(t.buf[:0], query, args)
	return err
}
func (t *textOnly) query(context.Context, string, []any) (*sql.Rows, error) { return nil, nil }
func (t *textOnly) commit(context.Context) error                            { return nil }
func (t *textOnly) rollback()                                               {}

// BenchmarkAppendUpsert is the sink's CPU per row outside the network and
// the server: a 5,000-row upsert of narrow rows (the bench workload
// narrow_insert's columns, values as Build makes them) written out as the
// statement text the pipeline sends. Reported per row.
func BenchmarkAppendUpsert(b *testing.B) {
	cfg := config.Default()
	cfg.Source.Tables = []string{"src.narrow_insert"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"p_narrow_insert": {
		From: "src.narrow_insert", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "k": "k", "a": "a", "b": "b", "c": "c", "d": "d", "commit_us": "commit_us"},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := ps[0]
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
	run := &textOnly{}
	a := applier{ctx: context.Background(), run: run, p: p, limit: 32 << 20, comment: "/* readside p_narrow_insert */ "}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.upsert(ups); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
