package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under e2e/testdata with what the code prints now")

// TestPlanGolden: `readside plan` for a plain projection, a join, a
// sharded projection, a sharded one with a join through a parent's parent
// (and which of its parents' changes scatter), and a replicated
// (reference) one prints exactly the
// DDL in testdata/plan.<flavor>.golden (regenerate with E2E=1 go test
// ./e2e -run TestPlanGolden -update, and review the diff). plan reads the source's columns from the
// live server; it connects to no sink without --apply, so the sinks' DSNs
// point nowhere.
func TestPlanGolden(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "plan")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+src+"`.customers (id BIGINT UNSIGNED PRIMARY KEY, name VARCHAR(100) NOT NULL, tier_id INT NOT NULL)",
		"CREATE TABLE `"+src+"`.orders (id BIGINT UNSIGNED PRIMARY KEY, customer_id BIGINT UNSIGNED NOT NULL, status ENUM('draft','paid','shipped') NOT NULL, total_cents BIGINT NOT NULL, note TEXT, created_at DATETIME(6) NOT NULL)",
		"CREATE TABLE `"+src+"`.tiers (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, discount DECIMAL(5,2))",
	); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%[3]s.customers, %[3]s.orders, %[3]s.tiers]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    dsn: "nobody:pw@tcp(127.0.0.1:1)/reads"
  sharded:
    shards:
      - {keyrange: "-80", dsn: "nobody:pw@tcp(127.0.0.1:1)/reads_a"}
      - {keyrange: "80-", dsn: "nobody:pw@tcp(127.0.0.1:1)/reads_b"}
projections:
  orders_copy:
    from: %[3]s.orders
    sink: reads
    key: [id]
    columns: {id: id, customer_id: customer_id, status: status, total_cents: total_cents, note: note, created_at: created_at}
  orders_with_customer:
    from: %[3]s.orders
    sink: reads
    key: [customer_id, id]
    columns: {id: id, customer_id: customer_id, total_cents: total_cents}
    where: "status <> 'draft'"
    join:
      - from: %[3]s.customers
        on: {id: customer_id}
        columns: {customer_name: name}
  orders_by_customer:
    from: %[3]s.orders
    sink: sharded
    key: [customer_id, created_at, id]
    shard_by: customer_id
    columns: {customer_id: customer_id, created_at: created_at, id: id, status: status}
  orders_with_tier:
    from: %[3]s.orders
    sink: sharded
    key: [customer_id, id]
    shard_by: customer_id
    columns: {customer_id: customer_id, id: id}
    join:
      - from: %[3]s.customers
        as: c
        on: {id: customer_id}
        columns: {customer_name: name}
      - from: %[3]s.tiers
        via: c
        on: {id: tier_id}
        columns: {tier_name: name}
  tiers:
    from: %[3]s.tiers
    sink: sharded
    replicated: true
    key: [id]
    columns: {id: id, name: name, discount: discount}
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), src)
	path := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, readsideBinary(t), "plan", "-c", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("readside plan: %v\n%s", err, stderr.String())
	}
	// The source database's name is unique per run.
	got := strings.ReplaceAll(stdout.String(), src, "shop")
	// Column types are the server's own rendering (MariaDB writes
	// bigint(20), MySQL 8 bigint): one golden file per flavor.
	var version string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	flavor := "mysql"
	if strings.Contains(strings.ToLower(version), "mariadb") {
		flavor = "mariadb"
	}
	golden := filepath.Join("testdata", "plan."+flavor+".golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", golden)
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with go test -run TestPlanGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("readside plan differs from %s (if the change is intended, rerun with -update and review the diff):\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff lists the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  want: %s\n  got:  %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
