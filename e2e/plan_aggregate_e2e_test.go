package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestPlanAggregate: `readside plan` prints an aggregate projection's
// aggregates with their read column types and the CREATE TABLE of its
// read table, of its contributions table and of a count(distinct)'s
// reference counts; `readside check` refuses
// aggregates that do not fit the source, every problem at once, each
// with its fix.
func TestPlanAggregate(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "plana")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, region_id INT, "+
		"created_at DATETIME(3) NOT NULL, total_cents BIGINT, status VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL, f DOUBLE)"); err != nil {
		t.Fatal(err)
	}
	run := func(cmdName, groupBy, aggregates string) (stdout, stderr string, err error) {
		cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%[3]s.orders]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    dsn: "nobody:pw@tcp(127.0.0.1:1)/reads"
projections:
  customer_stats:
    from: %[3]s.orders
    sink: reads
    where: "status <> 'draft'"
    group_by: %[4]s
    aggregates: %[5]s
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), src, groupBy, aggregates)
		path := filepath.Join(t.TempDir(), "readside.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, readsideBinary(t), cmdName, "-c", path)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, stderr, err := run("plan", "[customer_id, DATE(created_at)]", `{orders: "count(*)", total: "sum(total_cents)", last_at: "max(created_at)", avg_total: "avg(total_cents)", statuses: "count(distinct status)"}`)
	if err != nil {
		t.Fatalf("readside plan: %v\n%s", err, stderr)
	}
	t.Logf("readside plan:\n%s", out)
	for _, want := range []string{
		"-- aggregate: one row per group (customer_id, date_created_at); each source row's last contribution in _readside_agg_customer_stats, on every shard\n",
		"-- aggregate total = sum(total_cents): decimal(41,0) NULL\n",
		"-- aggregate avg_total = avg(total_cents): decimal(23,4) NULL\n",
		"CREATE TABLE IF NOT EXISTS `customer_stats` (",
		"`date_created_at` date NOT NULL",
		"`orders` bigint(21) NOT NULL COMMENT 'readside: count(*)'",
		"PRIMARY KEY (`customer_id`, `date_created_at`)",
		"CREATE TABLE IF NOT EXISTS `_readside_agg_customer_stats` (",
		"`g_customer_id` int(11) NULL",
		"KEY `_rs_last_at` (`g_customer_id`, `g_date_created_at`, `v_last_at`)",
		"-- aggregate statuses = count(distinct status): bigint(21) NOT NULL\n",
		"-- distinct values of statuses in _readside_dst_customer_stats_statuses, on every shard: one row per group and value (a reference count)",
		"`v_statuses` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL",
		"CREATE TABLE IF NOT EXISTS `_readside_dst_customer_stats_statuses` (",
		"`_rs_value` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL COMMENT 'readside: a value of count(distinct status)'",
		"PRIMARY KEY (`g_customer_id`, `g_date_created_at`, `_rs_value`)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("readside plan output lacks %q", want)
		}
	}
	out, stderr, err = run("check", "[region_id]", `{a: "sum(status)", b: "sum(f)", c: "max(nope)", d: "count(distinct status, f)", e: "avg(distinct f)"}`)
	if exitCode(err) == 0 {
		t.Fatal("readside check accepted aggregates that do not fit the source")
	}
	stderr += out
	t.Logf("readside check (bad aggregates): %v\n%s", err, stderr)
	for _, want := range []string{
		`projections.customer_stats.aggregates.a "sum(status)": sum over varchar(10)`,
		`projections.customer_stats.aggregates.b "sum(f)": sum over double: FLOAT and DOUBLE sums depend on the order rows are added in`,
		`projections.customer_stats.aggregates.c "max(nope)": at offset 0: column "nope" is not in the source table: name one of its columns (its columns: id, customer_id, region_id, created_at, total_cents, status, f)`,
		`projections.customer_stats.aggregates.d "count(distinct status, f)": count(DISTINCT …) of 2 expressions is not supported`,
		`projections.customer_stats.aggregates.e "avg(distinct f)": avg(DISTINCT …) is not supported: of the DISTINCT forms only count(distinct expr) and sum(distinct expr) are`,
		`projections.customer_stats.group_by column region_id copies`, `extend where to "(status <> 'draft') AND region_id IS NOT NULL"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("readside check's refusal lacks %q", want)
		}
	}
}
