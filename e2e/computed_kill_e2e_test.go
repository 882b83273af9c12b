package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// computedProjections use every function of the expression language, a
// month-bucket key, a CASE key that flips, JSON attributes promoted to a
// key, and a join through a parent's parent (orders → customers →
// regions). %[1]s is the source database.
const computedProjections = `  orders_by_customer_month:
    from: %[1]s.orders
    sink: reads
    key: [customer_id, month, id]
    shard_by: customer_id
    where: "customer_id IS NOT NULL AND status <> 'draft'"
    columns:
      customer_id: customer_id
      month: "DATE_FORMAT(created_at, '%%Y-%%m')"
      id: id
      total_eur: "total_cents / 100"
      whole_eur: "FLOOR(total_cents / 100)"
      cents_mod7: "MOD(total_cents, 7)"
      state: "CASE WHEN status IN ('paid', 'shipped') THEN 'done' ELSE 'open' END"
      big: "IF(total_cents > 50000, 1, 0)"
      day: "DATE(created_at)"
      yr: "YEAR(created_at)"
      mon: "MONTH(created_at)"
      epoch: "UNIX_TIMESTAMP(created_at)"
      week: "bucket(created_at, 'week')"
      note_upper: "UPPER(COALESCE(note, ''))"
      note_len: "LENGTH(note)"
      note_head: "SUBSTRING(note, 2, 5)"
      label: "CONCAT(status, '#', CAST(id AS CHAR))"
    join:
      - from: %[1]s.customers
        as: c
        on: {id: customer_id}
        columns: {customer_name: name}
      - from: %[1]s.regions
        via: c
        on: {id: region_id}
        columns: {region_name: name}
  orders_by_state:
    from: %[1]s.orders
    sink: reads
    key: [state, id]
    columns: {state: "CASE WHEN status IN ('paid', 'shipped') THEN 'done' ELSE 'open' END", id: id,
              lower_status: "LOWER(status)", chars: "CHAR_LENGTH(note)", crc: "CRC32(status)"}
  customers_by_plan:
    from: %[1]s.customers
    sink: reads
    key: [plan, id]
    columns: {plan: "COALESCE(JSON_VALUE(attrs, '$.plan'), 'none')", id: id,
              city: "JSON_UNQUOTE(JSON_EXTRACT(attrs, '$.address.city'))", name_lower: "LOWER(name)"}
`

// computedExpectations are the read tables as SQL on the source computes
// them (the session at UTC, as verify's): the same expressions, written
// out, except the week bucket, which readside verify checks.
func computedExpectations(src, sink string) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	return []struct{ name, want, got string }{
		{"orders_by_customer_month",
			"SELECT o.customer_id, DATE_FORMAT(o.created_at, '%Y-%m'), o.id, o.total_cents / 100, FLOOR(o.total_cents / 100), MOD(o.total_cents, 7)," +
				" CASE WHEN o.status IN ('paid', 'shipped') THEN 'done' ELSE 'open' END, IF(o.total_cents > 50000, 1, 0), DATE(o.created_at)," +
				" YEAR(o.created_at), MONTH(o.created_at), UNIX_TIMESTAMP(o.created_at), UPPER(COALESCE(o.note, '')), LENGTH(o.note), SUBSTRING(o.note, 2, 5)," +
				" CONCAT(o.status, '#', CAST(o.id AS CHAR)), c.name, r.name FROM " + q("orders") + " o LEFT JOIN " + q("customers") + " c ON c.id = o.customer_id" +
				" LEFT JOIN " + q("regions") + " r ON r.id = c.region_id WHERE o.customer_id IS NOT NULL AND o.status <> 'draft' ORDER BY 1, 2, 3",
			"SELECT customer_id, month, id, total_eur, whole_eur, cents_mod7, state, big, day, yr, mon, epoch, note_upper, note_len, note_head, label," +
				" customer_name, region_name FROM `" + sink + "`.orders_by_customer_month ORDER BY 1, 2, 3"},
		{"orders_by_state",
			"SELECT CASE WHEN status IN ('paid', 'shipped') THEN 'done' ELSE 'open' END, id, LOWER(status), CHAR_LENGTH(note), CRC32(status) FROM " + q("orders") + " ORDER BY 1, 2",
			"SELECT state, id, lower_status, chars, crc FROM `" + sink + "`.orders_by_state ORDER BY 1, 2"},
		{"customers_by_plan",
			"SELECT COALESCE(JSON_VALUE(attrs, '$.plan'), 'none'), id, JSON_UNQUOTE(JSON_EXTRACT(attrs, '$.address.city')), LOWER(name) FROM " + q("customers") + " ORDER BY 1, 2",
			"SELECT plan, id, city, name_lower FROM `" + sink + "`.customers_by_plan ORDER BY 1, 2"},
	}
}

// TestComputedKill9ShuffledVerify is issue 26's acceptance on the real
// binary, real MariaDB and real Kafka: a seeded random history over
// regions, customers and orders (renames, region moves, created_at moved
// across month boundaries, status flips in and out of the filter and the
// CASE key, JSON attributes changed, rows deleted and re-created) while
// `readside run` is SIGKILLed at least three times converges to the SQL
// expectation, and `readside verify` says EQUAL. Then the same history,
// shuffled with a fifth of it duplicated, is consumed from topics of its
// own by a projector SIGKILLed three more times, into a second sink: it
// converges to the same expectation.
func TestComputedKill9ShuffledVerify(t *testing.T) { computedKill9(t, computedProjections) }

// TestComputedKill9ShuffledVerifyBackground is the same with the
// two-level join's fan-out in the background (fan_out: background): the
// parents noted and not yet copied when a kill lands are copied by the
// next process.
func TestComputedKill9ShuffledVerifyBackground(t *testing.T) {
	background := strings.Replace(computedProjections, "    shard_by: customer_id\n", "    shard_by: customer_id\n    fan_out: background\n", 1)
	if background == computedProjections {
		t.Fatal("no shard_by line to put fan_out: background after")
	}
	computedKill9(t, background)
}

// computedKill9 runs TestComputedKill9ShuffledVerify with projections (a
// format of the source database, as computedProjections).
func computedKill9(t *testing.T, projections string) {
	if !strings.Contains(projections, "orders_by_customer_month:") {
		t.Fatal("the projections lack orders_by_customer_month")
	}
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sink := sourceAndSinkDBs(t, bed, "comp")
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+src+"`.regions (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
		"CREATE TABLE `"+src+"`.customers (id INT PRIMARY KEY, name VARCHAR(60) CHARACTER SET utf8mb4 NOT NULL, region_id INT NULL, attrs JSON NULL, KEY (region_id))",
		"CREATE TABLE `"+src+"`.orders (id BIGINT PRIMARY KEY, customer_id INT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL,"+
			" created_at DATETIME(6) NOT NULL, note VARCHAR(100) CHARACTER SET latin1 NULL, KEY (customer_id))"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tables := []string{src + ".regions", src + ".customers", src + ".orders"}
	head := bedConfigHead(bed, tables, "comp", filepath.Join(dir, "data"), sink)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(head+fmt.Sprintf(projections, src)), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	prefix := topicPrefixOf(t, head)
	waitForCheckpoint(t, bed, prefix)

	seed := seedFromEnv(t)
	target := envInt("E2E_COMPUTED_CHANGES", 20_000)
	werr, changes := make(chan error, 1), make(chan int, 1)
	go func() {
		n, err := computedWorkload(ctx, bed.MySQL.DB(), src, rand.New(rand.NewPCG(seed, 21)), target)
		changes <- n
		werr <- err
	}()
	kills := d.killWhile(rand.New(rand.NewPCG(seed, 22)), werr, 3)
	t.Logf("%d row changes, %d SIGKILLs of readside run", <-changes, kills)

	utc := utcDB(t, bed)
	waitExpected(t, utc, computedExpectations(src, sink), logPath)
	expectReadside(t, cfgPath, "after the kills", "verify", 0,
		"orders_by_customer_month: EQUAL", "orders_by_state: EQUAL", "customers_by_plan: EQUAL")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}

	// The same history, shuffled with duplicates, through topics of its own.
	p, log2, sink2 := shuffledRun{seed: seed, dir: dir, prefix: prefix, src: src, sink: sink, sink2: "comp_r2", head: head,
		projections: projections, tables: []string{"regions", "customers", "orders"}}.run(t, bed)
	waitExpected(t, utc, computedExpectations(src, sink2), log2)
	if code := p.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(log2))
	}
}

// computedWorkload runs transactions of 1–5 random statements until target
// row changes have committed.
func computedWorkload(ctx context.Context, db *sql.DB, src string, rng *rand.Rand, target int) (int, error) {
	r, c, o := "`"+src+"`.regions", "`"+src+"`.customers", "`"+src+"`.orders"
	statuses := []string{"draft", "new", "paid", "shipped"}
	plans := []string{`{"plan": "pro", "address": {"city": "Zürich"}}`, `{"plan": "free"}`, `{"address": {"city": "O'Brien \"Town\""}}`, `{"plan": null}`, `[]`}
	notes := []any{nil, "", "  padded  ", "Ärger über Öl", "ss ß Œ €", "a\\b", "ctl\u0081x"}
	return randomTxns(ctx, db, rng, target, 5, func(i int) (string, []any) {
		rid, cid, oid := 1+rng.IntN(20), 1+rng.IntN(200), 1+rng.IntN(3000)
		// Any second of 2023–2025, leap day and year ends included.
		created := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(3*365*86400)) * time.Second).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
		var attrs any
		if k := rng.IntN(len(plans) + 1); k < len(plans) {
			attrs = plans[k]
		}
		var q string
		var args []any
		switch x := rng.IntN(100); {
		case x < 4:
			q, args = "INSERT INTO "+r+" VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)", []any{rid, fmt.Sprintf("region %d/%d", rid, i)}
		case x < 5:
			q, args = "DELETE FROM "+r+" WHERE id = ?", []any{rid}
		case x < 12:
			q, args = "INSERT INTO "+c+" VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), attrs = VALUES(attrs)", []any{cid, fmt.Sprintf("Kunde %d-%d", cid, i), rid, attrs}
		case x < 17:
			q, args = "UPDATE "+c+" SET region_id = ? WHERE id = ?", []any{rid, cid}
		case x < 19:
			q, args = "DELETE FROM "+c+" WHERE id = ?", []any{cid}
		case x < 45:
			q, args = "INSERT INTO "+o+" VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE total_cents = VALUES(total_cents), note = VALUES(note)",
				[]any{oid, cid, statuses[rng.IntN(4)], rng.Int64N(200_000) - 1000, created, notes[rng.IntN(len(notes))]}
		case x < 60:
			q, args = "UPDATE "+o+" SET status = ? WHERE id = ?", []any{statuses[rng.IntN(4)], oid}
		case x < 75:
			// Across a month boundary, often.
			q, args = "UPDATE "+o+" SET created_at = created_at + INTERVAL ? HOUR WHERE id = ?", []any{rng.IntN(24*40) - 24*20, oid}
		case x < 82:
			q, args = "UPDATE "+o+" SET customer_id = ? WHERE id = ?", []any{[]any{cid, nil}[rng.IntN(2)], oid}
		case x < 90:
			q, args = "UPDATE "+o+" SET total_cents = total_cents + 99, note = ? WHERE customer_id = ?", []any{notes[rng.IntN(len(notes))], cid}
		default:
			q, args = "DELETE FROM "+o+" WHERE id = ?", []any{oid}
		}
		return q, args
	})
}

// utcDB is an admin pool whose sessions run at UTC, as verify's do, so
// that SQL over DATETIME values means what the projector computes.
func utcDB(t *testing.T, bed *testbed.Bed) *sql.DB {
	t.Helper()
	dsn := bed.MySQL.AdminDSN()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("mysql", dsn+sep+"time_zone=%27%2B00%3A00%27")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitExpected waits up to 3 minutes for each read table to equal its SQL
// expectation.
func waitExpected(t *testing.T, db *sql.DB, checks []struct{ name, want, got string }, logPath string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for _, c := range checks {
		for {
			want, got := testbed.RowsText(t, db, c.want), testbed.RowsText(t, db, c.got)
			if want == got {
				t.Logf("%s equals the SQL expectation: %d rows", c.name, strings.Count(want, "\n"))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s differs from the SQL expectation after 3 minutes:\nwant %d rows, got %d\n%s\nlog tail:\n%s", c.name,
					strings.Count(want, "\n"), strings.Count(got, "\n"), testbed.FirstDifference(got, want), tail(logPath))
			}
			time.Sleep(time.Second)
		}
	}
}

// topicPrefixOf is the topic_prefix a config head (bedConfigHead) sets.
func topicPrefixOf(t *testing.T, head string) string {
	t.Helper()
	_, rest, ok := strings.Cut(head, "topic_prefix: ")
	if !ok {
		t.Fatal("config head has no topic_prefix")
	}
	prefix, _, _ := strings.Cut(rest, "\n")
	return prefix
}

// produceShuffled writes records, in the order given, to the topics of
// prefix2 that mirror their prefix topics, each to the partition it came
// from (the tailer keeps a source row's changes in one partition, which a
// projector applies one batch at a time; across partitions, batches apply
// concurrently), in chunks over a few seconds so a projector consuming
// them can be killed midway.
func produceShuffled(ctx context.Context, brokers []string, prefix, prefix2 string, records []*kgo.Record) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	parts := map[string]int32{}
	for _, r := range records {
		parts[r.Topic] = max(parts[r.Topic], r.Partition+1)
	}
	for topic, n := range parts {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, prefix2+strings.TrimPrefix(topic, prefix)); err != nil {
			return fmt.Errorf("creating the shuffled copy of %s: %w", topic, err)
		}
	}
	const chunks = 20
	for i := range chunks {
		lo, hi := i*len(records)/chunks, (i+1)*len(records)/chunks
		batch := make([]*kgo.Record, 0, hi-lo)
		for _, r := range records[lo:hi] {
			batch = append(batch, &kgo.Record{Topic: prefix2 + strings.TrimPrefix(r.Topic, prefix), Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
	}
	return nil
}

// shuffledRun is the second half of a kill test: the history already
// published under prefix, shuffled with about 20% duplicates, replayed
// through topics of prefix+"s" into a fresh sink database named after
// sink2 (its config: head, retargeted, and projections) by a projector
// killed 3 times. The caller then checks that database against the
// source.
type shuffledRun struct {
	seed                          uint64
	dir, prefix, src, sink, sink2 string
	head, projections             string
	tables                        []string
}

// run replays the history and returns, once every shuffled record is
// produced, the replaying daemon (to stop after checking), its log path
// and the sink database's name.
func (s shuffledRun) run(t *testing.T, bed *testbed.Bed) (*daemon, string, string) {
	t.Helper()
	ctx := t.Context()
	var topics []string
	for _, tbl := range s.tables {
		topics = append(topics, event.TopicFor(s.prefix, s.src, tbl))
	}
	records := testbed.TopicRecords(t, bed.Kafka.Brokers(), topics...)
	rng := rand.New(rand.NewPCG(s.seed, 23))
	shuffled := append([]*kgo.Record{}, records...)
	for _, r := range records {
		if rng.IntN(5) == 0 {
			shuffled = append(shuffled, r)
		}
	}
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	t.Logf("history: %d records; replaying %d shuffled with duplicates", len(records), len(shuffled))

	sink2, err := bed.MySQL.CreateDatabase(ctx, s.sink2)
	if err != nil {
		t.Fatal(err)
	}
	prefix2 := s.prefix + "s"
	head2 := strings.NewReplacer("topic_prefix: "+s.prefix+"\n", "topic_prefix: "+prefix2+"\n",
		"/"+s.sink+"\"", "/"+sink2+"\"", filepath.Join(s.dir, "data"), filepath.Join(s.dir, "data2")).Replace(s.head)
	cfg2 := filepath.Join(s.dir, "shuffled.yaml")
	if err := os.WriteFile(cfg2, []byte(head2+fmt.Sprintf(s.projections, s.src)), 0o600); err != nil {
		t.Fatal(err)
	}
	produced := make(chan error, 1)
	go func() { produced <- produceShuffled(ctx, bed.Kafka.Brokers(), s.prefix, prefix2, shuffled) }()
	log2 := filepath.Join(s.dir, "shuffled.log")
	p := startDaemon(t, log2, "run", "--role", "projector", "-c", cfg2)
	kills := p.killWhile(rand.New(rand.NewPCG(s.seed, 24)), produced, 3)
	t.Logf("%d SIGKILLs of the projector consuming the shuffled history", kills)
	return p, log2, sink2
}
