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

// TestTableWithoutPrimaryKey: audit_log has no primary key, only a
// composite UNIQUE NOT NULL index named in source.keys. Its existing rows
// (snapshotted in chunks by that key) and a seeded live workload —
// inserts, note edits, actor changes (read-key moves), changes of the key
// columns themselves, deletes — reach a two-shard read table keyed by
// (actor, request_id, seq), and a join of events onto audit_log by the
// key columns; both end equal to the SQL expectation, and verify finds the
// read table equal.
func TestTableWithoutPrimaryKey(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "nopk")
	if err != nil {
		t.Fatal(err)
	}
	audit, events := "`"+src+"`.audit_log", "`"+src+"`.events"
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := bed.MySQL.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE " + audit + " (request_id VARCHAR(20) NOT NULL, seq INT NOT NULL, actor VARCHAR(20) NOT NULL, note VARCHAR(50) NULL, UNIQUE KEY uq_req (request_id, seq))")
	exec("CREATE TABLE " + events + " (id INT PRIMARY KEY, request_id VARCHAR(20) NOT NULL, seq INT NOT NULL, kind VARCHAR(10) NOT NULL)")
	for i := 1; i <= 100; i++ {
		exec("INSERT INTO "+audit+" VALUES (?, 1, ?, ?), (?, 2, ?, NULL)", fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i%7), fmt.Sprintf("n%d", i), fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i%5))
		exec("INSERT INTO "+events+" VALUES (?, ?, ?, 'old')", i, fmt.Sprintf("q%d", i), 1+i%3)
	}

	cfg := bed.Config("nopk", src+".audit_log", src+".events")
	cfg.Source.Snapshot.Mode = config.SnapshotInitial
	cfg.Source.Snapshot.ChunkRows = 40
	cfg.Source.Keys = config.TableKeys{src + ".audit_log": {"request_id", "seq"}}
	sink, shards := twoShards(t, bed, "nopkreads")
	one, err := bed.MySQL.CreateDatabase(ctx, "nopkjoin")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sinks = map[string]config.Sink{"reads": sink, "one": {DSN: config.Secret(bed.MySQL.AdminDSN() + one)}}
	cfg.Projections = map[string]config.Projection{
		"audit_by_actor": {From: src + ".audit_log", Sink: "reads", Key: []string{"actor", "request_id", "seq"}, ShardBy: "actor",
			Columns: map[string]string{"actor": "actor", "request_id": "request_id", "seq": "seq", "note": "note"}},
		"events_noted": {From: src + ".events", Sink: "one", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "request_id": "request_id", "seq": "seq", "kind": "kind"},
			Join:    []config.Join{{From: src + ".audit_log", On: map[string]string{"request_id": "request_id", "seq": "seq"}, Columns: map[string]string{"note": "note"}}}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sinksOf := map[string]*sinks.Sharded{}
	for _, p := range ps {
		types, err := p.SourceColumns(ctx, bed.MySQL.DB())
		if err != nil {
			t.Fatalf("projection %s on a table keyed by source.keys: %v", p.Name, err)
		}
		sk := openSink(ctx, t, cfg.Sinks[p.Sink], sinks.DDL(p, types))
		sinksOf[p.Name] = sk
	}
	runTailer(t, bed, cfg)
	for _, p := range ps {
		stop := startProjector(t, p, sinksOf[p.Name], cfg.Kafka.Brokers)
		defer stop()
	}

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 40))
	req := func() string { return fmt.Sprintf("q%d", 1+rng.IntN(130)) }
	seq := func() int { return 1 + rng.IntN(4) }
	for i := range 700 {
		switch r := rng.IntN(12); {
		case r < 2:
			exec("INSERT IGNORE INTO "+audit+" VALUES (?, ?, ?, ?)", req(), seq(), fmt.Sprintf("a%d", rng.IntN(7)), fmt.Sprintf("new%d", i))
		case r < 4:
			exec("UPDATE "+audit+" SET note = ? WHERE request_id = ? AND seq = ?", fmt.Sprintf("e%d", i), req(), seq())
		case r < 5:
			exec("UPDATE "+audit+" SET actor = ? WHERE request_id = ?", fmt.Sprintf("a%d", rng.IntN(7)), req())
		case r < 7:
			// The key columns change: a delete of the old key and a create
			// of the new (IGNORE: the new key may be taken).
			exec("UPDATE IGNORE "+audit+" SET seq = ? WHERE request_id = ? AND seq = ?", seq(), req(), seq())
		case r < 8:
			exec("UPDATE IGNORE "+audit+" SET request_id = ? WHERE request_id = ? AND seq = ?", req(), req(), seq())
		case r < 9:
			exec("DELETE FROM "+audit+" WHERE request_id = ? AND seq = ?", req(), seq())
		case r < 11:
			exec("INSERT INTO "+events+" VALUES (?, ?, ?, 'new') ON DUPLICATE KEY UPDATE request_id = VALUES(request_id), seq = VALUES(seq), kind = 'moved'", 1+rng.IntN(150), req(), seq())
		default:
			exec("DELETE FROM "+events+" WHERE id = ?", 1+rng.IntN(150))
		}
	}
	// The named moves happen whatever the seed.
	exec("INSERT INTO " + audit + " VALUES ('fixed', 1, 'a1', 'f'), ('fixed', 2, 'a2', 'g')")
	exec("INSERT INTO " + events + " VALUES (1001, 'fixed', 1, 'pin'), (1002, 'fixed', 9, 'pin')")
	exec("UPDATE " + audit + " SET seq = 9 WHERE request_id = 'fixed' AND seq = 1") // 1001 loses its note, 1002 gains one
	exec("UPDATE " + audit + " SET request_id = 'fixed2' WHERE request_id = 'fixed' AND seq = 2")

	wantAudit := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT actor, request_id, seq, note FROM "+audit+" ORDER BY 1, 2, 3")
	}
	gotAudit := func() string {
		var parts []string
		for _, db := range shards {
			parts = append(parts, "SELECT actor, request_id, seq, note FROM `"+db+"`.audit_by_actor")
		}
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1, 2, 3")
	}
	wantEvents := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT e.id, e.request_id, e.seq, e.kind, a.note FROM "+events+" e LEFT JOIN "+audit+" a ON a.request_id = e.request_id AND a.seq = e.seq ORDER BY 1")
	}
	gotEvents := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT id, request_id, seq, kind, note FROM `"+one+"`.events_noted ORDER BY 1")
	}
	testbed.Eventually(t, 120*time.Second, func() (bool, string) {
		wa, ga, we, ge := wantAudit(), gotAudit(), wantEvents(), gotEvents()
		return wa == ga && we == ge, fmt.Sprintf("read tables differ from the source:\naudit_by_actor: %s\nevents_noted: %s",
			testbed.FirstDifference(ga, wa), testbed.FirstDifference(ge, we))
	})
	t.Logf("audit_by_actor equals the source's %d rows, events_noted its %d", strings.Count(wantAudit(), "\n"), strings.Count(wantEvents(), "\n"))

	srcDB, err := verify.OpenSource(cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer srcDB.Close()
	for _, p := range ps {
		rep, err := verify.New(p, srcDB, sinksOf[p.Name], verify.Options{ChunkRows: 100, Settle: 5 * time.Second, Ends: projector.Ends(cfg.Kafka.Brokers), Log: logger()}).Run(ctx)
		if err != nil {
			t.Fatalf("verify %s: %v", p.Name, err)
		}
		if rep.Drift() != 0 || rep.Unsettled != 0 || rep.SinkRows != rep.SourceRows {
			t.Fatalf("verify %s: drift %d, unsettled %d, %d source and %d sink rows (samples %+v)", p.Name, rep.Drift(), rep.Unsettled, rep.SourceRows, rep.SinkRows, rep.Samples)
		}
	}
}
