package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/shards"
)

// TestShardsAnalyzePredictsShards: `readside shards analyze` predicts the
// rows the daemon puts on each shard of a 4-shard sink, for a Zipfian
// shard_by behind a where filter, a uniform one, and a computed one: with
// --all exactly (so skew within 1 percentage point, as the issue asks, and
// in fact equal), with the default sample exactly too (the table is
// smaller than the sample), and with a sample smaller than the table
// within shards.SkewBound; the current ranges follow a routing generation
// to the sink it names. --by a candidate predicts the rows of the
// projection sharded by it; bytes are the read rows' text lengths. The hottest value is the source's most
// frequent; --to counts the rows a 4 → 2 merge moves as the counts on the
// shards say. `readside plan` warns about the computed shard_by's low
// cardinality (7 values on 4 shards) and not about the uniform one.
func TestShardsAnalyzePredictsShards(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "shan")
	if err != nil {
		t.Fatal(err)
	}
	var sinkDBs [4]string
	var movedDBs [2]string // sink moved, which a hand-written routing generation names
	for i := range sinkDBs {
		if sinkDBs[i], err = bed.MySQL.CreateDatabase(ctx, "shanr"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range movedDBs {
		if movedDBs[i], err = bed.MySQL.CreateDatabase(ctx, "shanm"); err != nil {
			t.Fatal(err)
		}
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.events (id INT PRIMARY KEY, tenant INT NOT NULL, user_id INT NOT NULL, status VARCHAR(10) NOT NULL, body VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	ranges := []string{"-40", "40-80", "80-c0", "c0-"}
	prefix := "shan" + strconv.Itoa(rand.IntN(1e6))
	cfgPath := filepath.Join(t.TempDir(), "readside.yaml")
	cfg := fmt.Sprintf(`source:
  dsn: "${SOURCE_DSN}"
  server_id: %[1]d
  tables: [%[2]s.events]
kafka:
  brokers: [%[3]s]
  topic_prefix: %[4]s
  partitions: 4
sinks:
  reads:
    shards:
      - {keyrange: "%[5]s", dsn: "${SINK_DSN}%[9]s"}
      - {keyrange: "%[6]s", dsn: "${SINK_DSN}%[10]s"}
      - {keyrange: "%[7]s", dsn: "${SINK_DSN}%[11]s"}
      - {keyrange: "%[8]s", dsn: "${SINK_DSN}%[12]s"}
  moved:
    shards:
      - {keyrange: "-80", dsn: "${SINK_DSN}%[13]s"}
      - {keyrange: "80-", dsn: "${SINK_DSN}%[14]s"}
projections:
  by_tenant:
    from: %[2]s.events
    sink: reads
    table: by_tenant
    key: [tenant, id]
    shard_by: tenant
    columns: {tenant: tenant, id: id, status: status, body: body}
    where: "status <> 'draft'"
  by_user:
    from: %[2]s.events
    sink: reads
    table: by_user
    key: [user_id, id]
    shard_by: user_id
    columns: {user_id: user_id, id: id, body: body}
  by_region:
    from: %[2]s.events
    sink: reads
    table: by_region
    key: [region, id]
    shard_by: region
    columns: {region: "CONCAT('r-', tenant %% 7)", id: id}
`, testbed.NewServerID(), src, strings.Join(bed.Kafka.Brokers(), ", "), prefix,
		ranges[0], ranges[1], ranges[2], ranges[3], sinkDBs[0], sinkDBs[1], sinkDBs[2], sinkDBs[3], movedDBs[0], movedDBs[1])
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DSN", bed.MySQL.ReplDSN())
	t.Setenv("SINK_DSN", bed.MySQL.AdminDSN())
	d := startDaemon(t, filepath.Join(t.TempDir(), "daemon.log"), "run", "-c", cfgPath)
	waitForCheckpoint(t, bed, prefix)

	seed := seedFromEnv(t)
	rng := rand.New(rand.NewPCG(seed, 28))
	zipf := rand.NewZipf(rng, 1.1, 1, 999)
	const rows = 20_000
	for lo := 0; lo < rows; lo += 1000 {
		var vals []string
		for id := lo + 1; id <= lo+1000; id++ {
			status := "paid"
			if rng.IntN(10) == 0 {
				status = "draft"
			}
			vals = append(vals, fmt.Sprintf("(%d, %d, %d, '%s', '%s')", id, zipf.Uint64()+1, 1+rng.IntN(1_000_000), status, strings.Repeat("x", rng.IntN(64))))
		}
		if err := bed.MySQL.Exec(ctx, "INSERT INTO `"+src+"`.events VALUES "+strings.Join(vals, ", ")); err != nil {
			t.Fatal(err)
		}
	}
	count := func(q string) int64 {
		t.Helper()
		var n int64
		if err := bed.MySQL.DB().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	wants := map[string]int64{
		"by_tenant": count("SELECT COUNT(*) FROM `" + src + "`.events WHERE status <> 'draft'"),
		"by_user":   rows,
		"by_region": rows,
	}
	real := map[string][]int64{}
	for _, table := range []string{"by_tenant", "by_user", "by_region"} {
		testbed.Eventually(t, 5*time.Minute, func() (bool, string) {
			var per []int64
			var sum int64
			for _, db := range sinkDBs {
				var n int64
				if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+db+"`."+table).Scan(&n); err != nil {
					return false, err.Error()
				}
				per = append(per, n)
				sum += n
			}
			real[table] = per
			return sum == wants[table], fmt.Sprintf("%s holds %v = %d rows over its shards, want %d", table, per, sum, wants[table])
		})
	}
	if err := d.leave(time.Minute); err != nil {
		t.Fatal(err)
	}

	analyze := func(projection string, args ...string) shards.Report {
		t.Helper()
		cmd := exec.CommandContext(ctx, readsideBinary(t), append([]string{"shards", "analyze", "-c", cfgPath, "--projection", projection, "--json"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("readside shards analyze %s %v: %v\n%s", projection, args, err, stderr.String())
		}
		var rep shards.Report
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("analyze --json: %v\n%s", err, stdout.String())
		}
		return rep
	}
	for _, projection := range []string{"by_tenant", "by_user", "by_region"} {
		got := real[projection]
		realSkew := shards.Skew(got)
		for _, run := range []struct {
			args []string
			why  string
		}{
			{[]string{"--all"}, "every row"},
			{nil, "the default sample, which holds the whole table"},
		} {
			rep := analyze(projection, run.args...)
			cur := rep.Layouts[0]
			if cur.Ranges != strings.Join(ranges, ",") {
				t.Fatalf("%s: first layout %s, want the sink's current ranges", projection, cur.Ranges)
			}
			var predicted []int64
			for _, sh := range cur.Shards {
				predicted = append(predicted, sh.Rows)
			}
			if fmt.Sprint(predicted) != fmt.Sprint(got) || math.Abs(cur.Skew-realSkew) > 0.01 {
				t.Errorf("%s (%s): predicted %v (skew %.2f%%), the daemon applied %v (skew %.2f%%)", projection, run.why, predicted, 100*cur.Skew, got, 100*realSkew)
			} else {
				t.Logf("%s (%s): predicted and applied %v, skew %.2f%%", projection, run.why, got, 100*realSkew)
			}
			if rep.Sample.Every != 1 {
				t.Errorf("%s (%s): sampled 1 in %d rows, want every row", projection, run.why, rep.Sample.Every)
			}
		}
	}

	// --by routes another projection's rows by a candidate: by_user's rows
	// by by_region's computed key land as the daemon put by_region's, and
	// by_region's by user_id as by_user's.
	for _, c := range []struct{ projection, by, like string }{
		{"by_user", "CONCAT('r-', tenant % 7)", "by_region"},
		{"by_region", "user_id", "by_user"},
	} {
		rep := analyze(c.projection, "--all", "--by", c.by)
		var predicted []int64
		for _, sh := range rep.Layouts[0].Shards {
			predicted = append(predicted, sh.Rows)
		}
		if fmt.Sprint(predicted) != fmt.Sprint(real[c.like]) || rep.By != c.by {
			t.Errorf("%s --by %q: predicted %v (by %q), the daemon applied %v to %s", c.projection, c.by, predicted, rep.By, real[c.like], c.like)
		}
	}

	// Bytes are the read columns' text lengths, shard by shard.
	rep := analyze("by_user", "--all")
	for i, db := range sinkDBs {
		want := count("SELECT COALESCE(SUM(LENGTH(CAST(user_id AS BINARY)) + LENGTH(CAST(id AS BINARY)) + LENGTH(CAST(body AS BINARY))), 0) FROM `" + db + "`.by_user")
		if got := rep.Layouts[0].Shards[i].Bytes; got != want {
			t.Errorf("by_user shard %s: %d bytes predicted, its read rows hold %d", ranges[i], got, want)
		}
	}

	// The hottest tenant is the source's most frequent one.
	var hot string
	var hotRows int64
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT tenant, COUNT(*) n FROM `"+src+"`.events WHERE status <> 'draft' GROUP BY tenant ORDER BY n DESC, tenant LIMIT 1").Scan(&hot, &hotRows); err != nil {
		t.Fatal(err)
	}
	// A 4 → 2 merge keeps no range: every row moves, -40 and 40-80 into -80.
	rep = analyze("by_tenant", "--all", "--to", "-80,80-")
	if len(rep.Top) == 0 || rep.Top[0].Value != hot || rep.Top[0].Rows != hotRows {
		t.Errorf("hottest value %+v, want tenant %s with %d rows", rep.Top, hot, hotRows)
	}
	tenants := real["by_tenant"]
	if m := rep.Moves; m == nil || m.Rows != wants["by_tenant"] || len(m.Flows) != 4 || m.Flows[0].To != "-80" || m.Flows[0].Rows != tenants[0] || m.Flows[3].To != "80-" || m.Flows[3].Rows != tenants[3] {
		t.Errorf("moves %+v, want all %d rows, shard by shard %v", m, wants["by_tenant"], tenants)
	}

	// A sample smaller than the table stays within its documented bound.
	if err := bed.MySQL.Exec(ctx, "ANALYZE TABLE `"+src+"`.events"); err != nil {
		t.Fatal(err)
	}
	for _, projection := range []string{"by_tenant", "by_user"} {
		rep := analyze(projection, "--sample", "5000")
		cur := rep.Layouts[0]
		bound := shards.SkewBound(len(cur.Shards), rep.Rows)
		if rep.Sample.Every < 2 || rep.Sample.Read > 2*rows/rep.Sample.Every || math.Abs(cur.Skew-shards.Skew(real[projection])) > bound {
			t.Errorf("%s sampled 1 in %d: %d rows read (want at most twice %d/%d), %d counted: skew %.2f%%, the daemon's %.2f%%, want within ±%.2f points",
				projection, rep.Sample.Every, rep.Sample.Read, rows, rep.Sample.Every, rep.Rows, 100*cur.Skew, 100*shards.Skew(real[projection]), 100*bound)
		} else {
			t.Logf("%s sampled 1 in %d (%d rows): skew %.2f%%, the daemon's %.2f%% (bound ±%.2f points)", projection, rep.Sample.Every, rep.Rows, 100*cur.Skew, 100*shards.Skew(real[projection]), 100*bound)
		}
	}

	cmd := exec.CommandContext(ctx, readsideBinary(t), "plan", "-c", cfgPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("readside plan: %v\n%s", err, stderr.String())
	}
	plan := stdout.String()
	if !strings.Contains(plan, "-- warning: shard_by region has low cardinality: 7 distinct value(s)") {
		t.Errorf("plan does not warn about by_region's 7 values on 4 shards:\n%s\n%s", plan, stderr.String())
	}
	if strings.Contains(plan, "warning: shard_by user_id") {
		t.Errorf("plan warns about by_user's uniform shard_by:\n%s", plan)
	}

	// A routing generation that moved by_user to sink moved (-80,80-), as
	// a reshard records it before the config says so: the current ranges
	// are moved's, where by_user's rows are those of -40 and 40-80, and of
	// 80-c0 and c0-.
	var stmts []string
	for _, db := range sinkDBs {
		stmts = append(stmts, "INSERT INTO `"+db+"`.`_readside_routing` (projection, generation, sink, ranges) VALUES ('by_user', 1, 'moved', '-80,80-') ON DUPLICATE KEY UPDATE generation = 1, sink = 'moved', ranges = '-80,80-'")
	}
	for _, db := range movedDBs {
		stmts = append(stmts, "CREATE TABLE `"+db+"`.`_readside_routing` LIKE `"+sinkDBs[0]+"`.`_readside_routing`",
			"INSERT INTO `"+db+"`.`_readside_routing` (projection, generation, sink, ranges) VALUES ('by_user', 1, 'moved', '-80,80-')")
	}
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	rep = analyze("by_user", "--all")
	users := real["by_user"]
	if cur := rep.Layouts[0]; rep.Sink != "moved" || cur.Ranges != "-80,80-" || cur.Shards[0].Rows != users[0]+users[1] || cur.Shards[1].Rows != users[2]+users[3] {
		t.Errorf("after the routing moved by_user: sink %s, current %+v; want sink moved, -80,80- holding %d and %d rows", rep.Sink, cur, users[0]+users[1], users[2]+users[3])
	}
}
