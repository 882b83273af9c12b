package projections_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// The computed projection of TestComputedColumns: messages by (sender,
// month, lane), on two shards by a hashed shard key. Each expression is
// the contract: the read table must equal SELECT of the same texts on the
// source.
var computedCols = map[string]string{
	"shard":      "CRC32(CONCAT('s-', sender_id))",
	"month":      "DATE_FORMAT(created_at, '%Y-%m')",
	"lane":       "CASE WHEN status IN ('urgent', 'high') THEN 'hot' WHEN status = 'low' THEN 'cold' ELSE 'warm' END",
	"id":         "id",
	"body":       "body",
	"score":      "COALESCE(score, -1) * 2 + 1",
	"ratio":      "score / 8",
	"month_cast": "CAST(created_at AS CHAR(7))",
	"day":        "DATE(created_at)",
	"chars":      "CHAR_LENGTH(body)",
	"head":       "UPPER(SUBSTRING(body, 1, 5))",
	"brand":      "JSON_VALUE(attrs, '$.brand')",
}

const computedWhere = "COALESCE(score, 0) * 2 < 150"

// computedOrder is the read key (shard_by leads), then the rest.
var computedOrder = []string{"shard", "month", "lane", "id", "body", "score", "ratio", "month_cast", "day", "chars", "head", "brand"}

// TestComputedColumns: a projection whose key (a DATE_FORMAT month
// bucket, a CASE lane), shard key (CRC32 of a CONCAT) and filter are
// expressions, with string, date and JSON functions in other columns, on
// two shards, while a seeded workload moves rows across
// month boundaries (created_at updates), flips the CASE key (status
// updates), moves them in and out of the filter (score updates), deletes
// and re-inserts them; the projector is restarted midway. The read table
// ends equal to the SQL expectation on the source, and verify finds it
// equal, then finds a computed value changed by hand on the sink.
func TestComputedColumns(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "comp")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.messages (id INT PRIMARY KEY, sender_id INT NOT NULL, "+
		"status VARCHAR(10) CHARACTER SET utf8mb4 NOT NULL, created_at DATETIME(6) NOT NULL, body VARCHAR(200) CHARACTER SET utf8mb4, score INT, attrs JSON)"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("comp", src+".messages")
	sinkCfg, shards := twoShards(t, bed, "compreads")
	cfg.Sinks = map[string]config.Sink{"reads": sinkCfg}
	cfg.Projections = map[string]config.Projection{"by_month": {
		From: src + ".messages", Sink: "reads", Key: []string{"shard", "month", "lane", "id"}, ShardBy: "shard",
		Columns: computedCols, Where: computedWhere, ColumnTypes: map[string]string{"lane": "varchar(8) CHARACTER SET utf8mb4"},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range computedOrder {
		t.Logf("read column %s: %s", c, types.Read[c])
	}
	sink, err := sinks.OpenSharded(ctx, "reads", sinkCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
		t.Fatal(err)
	}
	runTailer(t, bed, cfg)

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := startProjector(t, p, sink, cfg.Kafka.Brokers)
	writeComputed(t, bed, src, seed, 1200)
	stop() // a restart resumes from the offsets stored with the rows
	writeComputed(t, bed, src, seed+1, 1200)
	stop = startProjector(t, p, sink, cfg.Kafka.Brokers)
	defer stop()

	var exprs []string
	for _, c := range computedOrder {
		exprs = append(exprs, "("+computedCols[c]+")")
	}
	cols := strings.Join(computedOrder, ", ")
	want := "SELECT " + strings.Join(exprs, ", ") + " FROM `" + src + "`.messages WHERE " + computedWhere + " ORDER BY 1, 2, 3, 4"
	var parts []string
	for _, db := range shards {
		parts = append(parts, "SELECT "+cols+" FROM `"+db+"`.by_month")
	}
	got := "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") u ORDER BY 1, 2, 3, 4"
	db := bed.MySQL.DB()
	var rows int
	testbed.Eventually(t, 120*time.Second, func() (bool, string) {
		w, g := testbed.RowsText(t, db, want), testbed.RowsText(t, db, got)
		rows = strings.Count(w, "\n")
		return w == g, fmt.Sprintf("read table differs from the source's SELECT:\nsource:\n%.2000s\nread:\n%.2000s", w, g)
	})
	t.Logf("read table equals the source's SELECT of the expressions: %d rows", rows)

	vsrc, err := verify.OpenSource(cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vsrc.Close() })
	v := verify.New(p, vsrc, sink, verify.Options{Ends: projector.Ends(cfg.Kafka.Brokers), Log: logger(), ChunkRows: 200, Settle: 5 * time.Second, StateFile: t.TempDir() + "/state.json"})
	rep, err := v.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.SourceRows != int64(rows) || rep.SinkRows != rep.SourceRows {
		t.Fatalf("verify of the converged computed projection: drift %d, %d source and %d sink rows (want 0, %d, %d)", rep.Drift(), rep.SourceRows, rep.SinkRows, rows, rows)
	}
	// verify is not vacuous on computed columns: a computed value
	// changed on the sink is found.
	var changed bool
	for _, db := range shards {
		res, err := bed.MySQL.DB().ExecContext(ctx, "UPDATE `"+db+"`.by_month SET score = score + 2 LIMIT 1")
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			changed = true
			break
		}
	}
	if !changed {
		t.Fatal("no read row to change")
	}
	v = verify.New(p, vsrc, sink, verify.Options{Ends: projector.Ends(cfg.Kafka.Brokers), Log: logger(), ChunkRows: 200, Settle: time.Second, StateFile: t.TempDir() + "/state.json"})
	if rep, err = v.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 1 {
		t.Fatalf("verify after a computed value was changed on the sink: drift %d, want 1: %+v", rep.Drift(), rep)
	}
}

// writeComputed runs a seeded workload on the computed projection's
// source: inserts near month boundaries, created_at updates across them
// (month key moves), status flips (CASE key moves), score changes in and
// out of the filter (and to NULL), deletes and re-inserts.
func writeComputed(t *testing.T, bed *testbed.Bed, src string, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	db := bed.MySQL.DB()
	live := liveIDs(t, bed, "`"+src+"`.messages")
	exec := func(q string, args ...any) {
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Instants on both sides of month (and year) boundaries.
	instants := []string{"2025-12-31 23:59:59.999999", "2026-01-01 00:00:00.000000", "2026-01-31 23:59:59.999999",
		"2026-02-01 00:00:00.000000", "2026-02-28 12:00:00.500000", "2026-03-01 00:00:00.000001"}
	statuses := []string{"urgent", "high", "low", "normal", "Urgent", "urgent "}
	attrs := []any{nil, `{"brand": "Acme"}`, `{"brand": "ünï ✓"}`, `{"x": 1}`, `{"brand": null}`, `{"brand": 5}`, `{"brand": "a\"b"}`}
	score := func() any {
		if rng.IntN(6) == 0 {
			return nil
		}
		return rng.IntN(120) - 20 // filter: score*2 < 150, i.e. score < 75
	}
	table := "`" + src + "`.messages"
	for i := range ops {
		id := 1 + rng.IntN(250)
		switch r := rng.IntN(100); {
		case !live[id]:
			exec("INSERT INTO "+table+" VALUES (?, ?, ?, ?, ?, ?, ?)", id, rng.IntN(30), statuses[rng.IntN(len(statuses))],
				instants[rng.IntN(len(instants))], fmt.Sprintf("msg %d ✓ '%d'", id, i), score(), attrs[rng.IntN(len(attrs))])
			live[id] = true
		case r < 25:
			exec("UPDATE "+table+" SET created_at = ? WHERE id = ?", instants[rng.IntN(len(instants))], id) // month move
		case r < 50:
			exec("UPDATE "+table+" SET status = ? WHERE id = ?", statuses[rng.IntN(len(statuses))], id) // CASE key flip
		case r < 70:
			exec("UPDATE "+table+" SET score = ? WHERE id = ?", score(), id) // in and out of the filter
		case r < 80:
			exec("UPDATE "+table+" SET body = ?, sender_id = ? WHERE id = ?", fmt.Sprintf("edit %d", i), rng.IntN(30), id) // shard move
		default:
			exec("DELETE FROM "+table+" WHERE id = ?", id)
			delete(live, id)
		}
	}
}
