package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// envelope is the part of a change event this test checks.
type envelope struct {
	Op      string                     `json:"op"`
	Version uint64                     `json:"version"`
	Table   string                     `json:"table"`
	Key     map[string]json.RawMessage `json:"key"`
	Before  map[string]json.RawMessage `json:"before"`
	After   map[string]json.RawMessage `json:"after"`
}

func (e envelope) seq() int64 {
	img := e.After
	if e.Op == "d" {
		img = e.Before
	}
	n, _ := strconv.ParseInt(string(img["seq"]), 10, 64)
	return n
}

func (e envelope) key() string {
	unq := func(r json.RawMessage) string { return strings.Trim(string(r), `"`) }
	if e.Table == "pairs" {
		return unq(e.Key["a"]) + "|" + unq(e.Key["b"])
	}
	return unq(e.Key["id"])
}

// writeTailerConfig writes a config capturing tables of dbName.
func writeTailerConfig(t *testing.T, bed *testbed.Bed, dir, dbName, prefix string, tables ...string) string {
	t.Helper()
	var qualified []string
	for _, tbl := range tables {
		qualified = append(qualified, dbName+"."+tbl)
	}
	cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %d
  tables: [%s]
  snapshot:
    mode: never
kafka:
  brokers: [%s]
  topic_prefix: %s
  partitions: 4
log:
  level: info
`, testbed.NewServerID(), strings.Join(qualified, ", "), strings.Join(bed.Kafka.Brokers(), ", "), prefix)
	path := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTailerSurvivesKill9: a seeded random workload runs while the tailer
// is killed with SIGKILL at random moments and restarted. A read-committed
// consumer must see every committed change exactly once, in commit order
// per key, nothing from rolled-back transactions, and the state rebuilt
// from the topics must equal the source tables.
func TestTailerSurvivesKill9(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	dbName, err := bed.MySQL.CreateDatabase(ctx, "kill")
	if err != nil {
		t.Fatal(err)
	}
	if err := createWorkloadTables(ctx, bed.MySQL.DB(), dbName); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix := "kill" + strconv.Itoa(rand.IntN(1e6))
	cfgPath := writeTailerConfig(t, bed, dir, dbName, prefix, "accounts", "pairs")
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "--role", "tailer", "-c", cfgPath)
	waitForCheckpoint(t, bed, prefix)

	changes := envInt("E2E_KILL_CHANGES", 100_000)
	w := &workload{db: bed.MySQL.DB(), dbName: dbName, seed: seedFromEnv(t), writers: 2, model: newModel()}
	wctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	werr := make(chan error, 1)
	go func() { werr <- w.run(wctx, changes) }()

	kills := d.killWhile(rand.New(rand.NewPCG(w.seed, 99)), werr, 5)
	t.Logf("workload: %d committed row changes, %d SIGKILLs of the tailer", w.model.total(), kills)

	events := consumeEvents(t, bed, w.model.total(), 4*time.Minute, prefix+"."+dbName+".accounts", prefix+"."+dbName+".pairs")
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside exited %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
	checkAgainstModel(t, events, w.model)
	checkAgainstSource(t, bed, dbName, events)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// waitForCheckpoint waits until the tailer has committed its first
// checkpoint, so later writes are captured.
func waitForCheckpoint(t *testing.T, bed *testbed.Bed, prefix string) {
	t.Helper()
	testbed.WaitForTailer(t, bed.MySQL, bed.Kafka.Brokers(), prefix+"._readside_checkpoints")
}

// consumeEvents reads every record of topics from the start with a
// read-committed consumer until want have arrived (and 3 s more bring
// nothing new), or nothing new arrived for 20 s. A stall is reported with
// each partition's position against its last stable offset and high
// watermark and the fetch errors seen; when the broker holds committed
// records past the positions (the consumer, not the topics, stalled) a
// fresh client goes on from the same positions, so every record is still
// read exactly once.
func consumeEvents(t *testing.T, bed *testbed.Bed, want int, timeout time.Duration, topics ...string) []envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	next := map[string]map[int32]int64{} // per topic, partition: the next offset to read
	consumer := func() *kgo.Client {
		opts := []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxBytes(64 << 20)}
		if len(next) == 0 {
			opts = append(opts, kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		} else {
			from := map[string]map[int32]kgo.Offset{}
			for topic, ps := range next {
				from[topic] = map[int32]kgo.Offset{}
				for p, o := range ps {
					from[topic][p] = kgo.NewOffset().At(o)
				}
			}
			opts = append(opts, kgo.ConsumePartitions(from))
		}
		return newClient(t, bed, opts...)
	}
	cl := consumer()
	var out []envelope
	quietUntil := time.Time{}
	lastNew := time.Now()
	fetchErrs := map[string]int{}
	for restarts := 0; ; {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d events before the timeout", len(out), want)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fetchErrs[fmt.Sprintf("%s/%d: %v", topic, p, err)]++
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if next[r.Topic] == nil {
				next[r.Topic] = map[int32]int64{}
			}
			next[r.Topic][r.Partition] = r.Offset + 1
			if r.Value == nil {
				return
			}
			var e envelope
			dec := json.NewDecoder(bytes.NewReader(r.Value))
			dec.UseNumber()
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("bad envelope at %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			out = append(out, e)
			lastNew = time.Now()
		})
		if time.Since(lastNew) > 20*time.Second {
			if !reportConsumerStall(t, bed, next, topics, fetchErrs) || restarts == 2 {
				t.Errorf("only %d of %d events arrived; nothing new for 20s", len(out), want)
				return out
			}
			restarts++
			t.Logf("consumer stalled with committed records left to read: a fresh client goes on from its positions (restart %d)", restarts)
			cl.Close()
			cl, lastNew = consumer(), time.Now()
			continue
		}
		if len(out) >= want {
			if quietUntil.IsZero() {
				quietUntil = time.Now().Add(3 * time.Second)
			} else if time.Now().After(quietUntil) {
				return out
			}
		}
	}
}

// reportConsumerStall logs, per partition of topics, the consumer's
// position against the last stable offset (what read-committed consumers
// may read) and the high watermark, and the fetch errors seen; it reports
// whether some partition holds committed records past the position. A
// partition nothing was read from gets position 0 in next, where a fresh
// client starts it.
func reportConsumerStall(t *testing.T, bed *testbed.Bed, next map[string]map[int32]int64, topics []string, fetchErrs map[string]int) bool {
	t.Helper()
	adm := kadm.NewClient(newClient(t, bed))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stable, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		t.Logf("consumer stall: listing last stable offsets: %v", err)
		return false
	}
	hwm, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Logf("consumer stall: listing high watermarks: %v", err)
		return false
	}
	behind := false
	stable.Each(func(o kadm.ListedOffset) {
		h, _ := hwm.Lookup(o.Topic, o.Partition)
		if next[o.Topic] == nil {
			next[o.Topic] = map[int32]int64{}
		}
		at := next[o.Topic][o.Partition]
		next[o.Topic][o.Partition] = at // 0 when nothing was read
		t.Logf("consumer stall: %s/%d position %d, last stable offset %d (%v), high watermark %d", o.Topic, o.Partition, at, o.Offset, o.Err, h.Offset)
		if o.Err == nil && o.Offset > at+1 {
			behind = true
		}
	})
	for e, n := range fetchErrs {
		t.Logf("consumer stall: fetch error ×%d: %s", n, e)
	}
	return behind
}

// checkAgainstModel: per key, exactly the committed changes in commit order,
// each once, with strictly increasing versions.
func checkAgainstModel(t *testing.T, events []envelope, m *model) {
	t.Helper()
	got := map[string]map[string][]envelope{}
	for _, e := range events {
		if got[e.Table] == nil {
			got[e.Table] = map[string][]envelope{}
		}
		got[e.Table][e.key()] = append(got[e.Table][e.key()], e)
	}
	bad := 0
	for table, keys := range m.changes {
		for key, want := range keys {
			g := got[table][key]
			match := len(g) == len(want)
			for i := 0; match && i < len(g); i++ {
				match = g[i].Op == want[i].op && g[i].seq() == want[i].seq
				if i > 0 && g[i].Version <= g[i-1].Version {
					t.Errorf("%s key %s: version %d after %d", table, key, g[i].Version, g[i-1].Version)
				}
			}
			if !match {
				if bad++; bad <= 10 {
					var gs []string
					for _, e := range g {
						gs = append(gs, fmt.Sprintf("%s%d", e.Op, e.seq()))
					}
					t.Errorf("%s key %s: events %v, committed %v", table, key, gs, want)
				}
			}
			delete(got[table], key)
		}
	}
	for table, keys := range got {
		for key, es := range keys {
			if bad++; bad <= 20 {
				t.Errorf("%s key %s: %d events for changes never committed (rolled back?)", table, key, len(es))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d keys differ from what was committed", bad)
	}
}

// checkAgainstSource rebuilds each table from its events and compares it
// with the source table, row by row (by seq, which every write sets).
func checkAgainstSource(t *testing.T, bed *testbed.Bed, dbName string, events []envelope) {
	t.Helper()
	state := map[string]map[string]int64{}
	for _, e := range events {
		if state[e.Table] == nil {
			state[e.Table] = map[string]int64{}
		}
		if e.Op == "d" {
			delete(state[e.Table], e.key())
		} else {
			state[e.Table][e.key()] = e.seq()
		}
	}
	for table, q := range map[string]string{
		"accounts": "SELECT CAST(id AS CHAR), seq FROM `%s`.accounts",
		"pairs":    "SELECT CONCAT(a, '|', b), seq FROM `%s`.pairs",
	} {
		rows, err := bed.MySQL.DB().QueryContext(t.Context(), fmt.Sprintf(q, dbName))
		if err != nil {
			t.Fatal(err)
		}
		source := map[string]int64{}
		for rows.Next() {
			var k string
			var s int64
			if err := rows.Scan(&k, &s); err != nil {
				t.Fatal(err)
			}
			source[k] = s
		}
		rows.Close()
		diff := 0
		for k, s := range source {
			if state[table][k] != s {
				if diff++; diff <= 5 {
					t.Errorf("%s key %s: source seq %d, rebuilt from topic %d", table, k, s, state[table][k])
				}
			}
		}
		if len(source) != len(state[table]) {
			t.Errorf("%s: source has %d rows, topic state %d", table, len(source), len(state[table]))
		}
	}
}
