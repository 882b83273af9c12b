package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/shards"
)

// TestShardsAnalyzeDefaultSample: on a table larger than the default
// sample (1.2 million rows), `readside shards analyze` without --all reads
// a sample of about a million rows, not the table, and puts the skew of
// each layout (the sink's 4 shards, even splits into 2, 4, 8 and 16)
// within shards.SkewBound of the exact skew --all measures (--all is
// checked against the daemon's shards by TestShardsAnalyzePredictsShards),
// for a Zipfian shard_by (P(v) ∝ 1/v over 1..999) and a uniform one. The
// rows are made by the server (INSERT … SELECT), not applied: only the
// source is read.
func TestShardsAnalyzeDefaultSample(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "shsm")
	if err != nil {
		t.Fatal(err)
	}
	var sinkDBs [4]string
	for i := range sinkDBs {
		if sinkDBs[i], err = bed.MySQL.CreateDatabase(ctx, "shsmr"); err != nil {
			t.Fatal(err)
		}
	}
	const rows = 1_200_000
	digits := "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	million := "SELECT a.i + 10*b.i + 100*c.i + 1000*d.i + 10000*e.i + 100000*f.i AS n FROM " +
		digits + " a, " + digits + " b, " + digits + " c, " + digits + " d, " + digits + " e, " + digits + " f"
	// u is n scattered over [0, 1); EXP(u·LN(1000)) is log-uniform, so
	// tenant v has probability ∝ 1/v: Zipf with s = 1.
	insert := func(offset int) string {
		return fmt.Sprintf("INSERT INTO `%s`.events SELECT n + %[2]d, FLOOR(EXP(LN(999) * MOD((n + %[2]d) * 2654435761, 1000003) / 1000003)), 1 + MOD((n + %[2]d) * 40503, 1000003) FROM (%[3]s) m WHERE n + %[2]d < %[4]d",
			src, offset, million, rows)
	}
	// One session without binlog: no tailer reads this table, and 1.2
	// million row images would only load the shared disk.
	testbed.Unlogged(t, bed.MySQL.DB(),
		"CREATE TABLE `"+src+"`.events (id INT PRIMARY KEY, tenant INT NOT NULL, user_id INT NOT NULL)",
		insert(0), insert(1_000_000), "ANALYZE TABLE `"+src+"`.events")
	cfgPath := filepath.Join(t.TempDir(), "readside.yaml")
	cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%[3]s.events]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    shards:
      - {keyrange: "-40", dsn: "%[4]s%[5]s"}
      - {keyrange: "40-80", dsn: "%[4]s%[6]s"}
      - {keyrange: "80-c0", dsn: "%[4]s%[7]s"}
      - {keyrange: "c0-", dsn: "%[4]s%[8]s"}
projections:
  by_tenant:
    from: %[3]s.events
    sink: reads
    key: [tenant, id]
    shard_by: tenant
    columns: {tenant: tenant, id: id}
  by_user:
    from: %[3]s.events
    sink: reads
    key: [user_id, id]
    shard_by: user_id
    columns: {user_id: user_id, id: id}
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), src, bed.MySQL.AdminDSN(), sinkDBs[0], sinkDBs[1], sinkDBs[2], sinkDBs[3])
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
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
	for _, projection := range []string{"by_tenant", "by_user"} {
		exact := analyze(projection, "--all")
		sampled := analyze(projection)
		if exact.Rows != rows || exact.Sample.Every != 1 {
			t.Fatalf("%s --all: %d rows, 1 in %d, want all %d", projection, exact.Rows, exact.Sample.Every, rows)
		}
		if s := sampled.Sample; s.Every < 2 || s.Read > 2*rows/s.Every || s.Read < shards.DefaultSample/2 {
			t.Errorf("%s: the default sample read %d rows (1 in %d): want about %d, not the table", projection, s.Read, s.Every, shards.DefaultSample)
		}
		for i, l := range sampled.Layouts {
			want := exact.Layouts[i]
			bound := shards.SkewBound(len(l.Shards), sampled.Rows)
			if l.Ranges != want.Ranges || math.Abs(l.Skew-want.Skew) > bound || l.SkewBound != bound {
				t.Errorf("%s %s: sampled skew %.2f%% (bound %.2f printed), exact %.2f%%: want within ±%.2f points", projection, l.Ranges, 100*l.Skew, 100*l.SkewBound, 100*want.Skew, 100*bound)
			} else {
				t.Logf("%s %s: sampled skew %.2f%%, exact %.2f%% (bound ±%.2f points, %d of %d rows)", projection, l.Name, 100*l.Skew, 100*want.Skew, 100*bound, sampled.Rows, rows)
			}
		}
	}
}

// TestShardsAnalyzeBinaryKey: a BINARY(16) primary key, most of whose
// values are not UTF-8, is paged through whole in chunks (12,000 rows,
// 5,000 a query), each value routed by its bytes; --by a latin1 column
// routes its UTF-8 text, as the projector does. The expected shards are
// computed here with keyspace.ID.
func TestShardsAnalyzeBinaryKey(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "shbk")
	if err != nil {
		t.Fatal(err)
	}
	const rows = 12_000
	digits := "(SELECT 0 i UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+src+"`.tokens (id BINARY(16) PRIMARY KEY, owner VARCHAR(20) CHARACTER SET latin1 NOT NULL)",
		fmt.Sprintf("INSERT INTO `%s`.tokens SELECT UNHEX(MD5(n)), CONCAT(_latin1 X'E9', MOD(n, 50)) FROM (SELECT a.i + 10*b.i + 100*c.i + 1000*d.i + 10000*e.i AS n FROM %[2]s a, %[2]s b, %[2]s c, %[2]s d, %[2]s e) m WHERE n < %d",
			src, digits, rows)); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "readside.yaml")
	cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%[3]s.tokens]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    dsn: "nobody:pw@tcp(127.0.0.1:1)/reads"
projections:
  tokens:
    from: %[3]s.tokens
    sink: reads
    key: [id]
    shard_by: id
    columns: {id: id, owner: owner}
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), src)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	four, err := shards.EvenRanges(4)
	if err != nil {
		t.Fatal(err)
	}
	byID, byOwner := make([]int64, 4), make([]int64, 4)
	shardOf := func(v []byte) int {
		id := keyspace.ID(v)
		for i, r := range four {
			if r.Contains(id) {
				return i
			}
		}
		return -1
	}
	for n := range rows {
		sum := md5.Sum([]byte(strconv.Itoa(n)))
		byID[shardOf(sum[:])]++
		byOwner[shardOf([]byte("é"+strconv.Itoa(n%50)))]++
	}
	for _, c := range []struct {
		args []string
		want []int64
	}{
		{nil, byID},
		{[]string{"--by", "owner"}, byOwner},
	} {
		cmd := exec.CommandContext(ctx, readsideBinary(t), append([]string{"shards", "analyze", "-c", cfgPath, "--projection", "tokens", "--json", "--all", "--shards", "4"}, c.args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("readside shards analyze %v: %v\n%s", c.args, err, stderr.String())
		}
		var rep shards.Report
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("analyze --json: %v\n%s", err, stdout.String())
		}
		var got []int64
		for _, sh := range rep.Layouts[1].Shards {
			got = append(got, sh.Rows)
		}
		if rep.Sample.Read != rows || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("analyze %v: %d rows read, 4 shards %v; want %d rows, %v", c.args, rep.Sample.Read, got, rows, c.want)
		}
	}
}
