package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// runVerb runs `readside <verb> -c cfg` and returns its exit code, stdout
// and stderr.
func runVerb(t *testing.T, verb, cfg string) (int, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), readsideBinary(t), verb, "-c", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestLiveSchemaErrors: projections that do not fit the live source
// schema — a missing source column, a nullable key column the filter does
// not keep NULL out of, a filter on a missing column, a join copying a
// missing parent column, a missing source table — make `readside check`
// and `readside plan` exit 1 with every problem at once, each naming the
// projection, the column and the fix; a nullable key column with
// `where: "customer_id IS NOT NULL"` plans, NOT NULL in the read table.
func TestLiveSchemaErrors(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, sinkDB := sourceAndSinkDBs(t, bed, "lsc")
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+db+"`.customers (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL)",
		"CREATE TABLE `"+db+"`.orders (id INT PRIMARY KEY, customer_id INT NULL, status VARCHAR(20) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("source:\n  dsn: %q\n  server_id: %d\n  tables: [%[3]s.orders, %[3]s.customers, %[3]s.gone]\nkafka:\n  brokers: [%s]\nsinks:\n  reads:\n    dsn: %q\nprojections:\n",
		bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), bed.MySQL.AdminDSN()+sinkDB)
	good := fmt.Sprintf(`  orders_by_customer:
    from: %[1]s.orders
    sink: reads
    key: [customer_id, id]
    where: "customer_id IS NOT NULL"
    columns: {id: id, customer_id: customer_id, status: status}
`, db)
	bad := fmt.Sprintf(`  a_missing_column:
    from: %[1]s.orders
    sink: reads
    key: [id]
    columns: {id: id, state: statu}
  b_nullable_key:
    from: %[1]s.orders
    sink: reads
    key: [customer_id, id]
    where: "status <> 'draft'"
    columns: {id: id, customer_id: customer_id}
  c_where_column:
    from: %[1]s.orders
    sink: reads
    key: [id]
    where: "colour = 'red'"
    columns: {id: id}
  d_join_column:
    from: %[1]s.orders
    sink: reads
    key: [id]
    columns: {id: id, customer_id: customer_id}
    join:
      - from: %[1]s.customers
        on: {id: customer_id}
        columns: {customer_name: nam}
  e_missing_table:
    from: %[1]s.gone
    sink: reads
    key: [id]
    columns: {id: id}
`, db)
	// Each: the projection and column named, and the fix.
	wants := []string{
		`projections.a_missing_column.columns.state: source column "statu" does not exist in ` + db + `.orders (its columns: id, customer_id, status): map state to one of them`,
		`projections.b_nullable_key.key column customer_id copies ` + db + `.orders.customer_id, which is nullable, and where does not exclude NULL for it: a read key cannot be NULL; extend where to "(status <> 'draft') AND customer_id IS NOT NULL" (rows with customer_id NULL are then left out of the read table), or make customer_id NOT NULL in the source`,
		`projections.c_where_column.where: column "colour" does not exist in ` + db + `.orders (its columns: id, customer_id, status): the filter reads source columns; use one of them`,
		`projections.d_join_column.join[0].columns.customer_name: parent column "nam" does not exist in ` + db + `.customers (its columns: id, name): map customer_name to one of them`,
		`projections.e_missing_table.from: ` + db + `.gone does not exist on the source: correct from, create the table, or grant the source user SELECT on it`,
	}

	code, out, _ := runVerb(t, "check", head+good+bad)
	t.Logf("readside check:\n%s", out)
	if code != 1 {
		t.Errorf("check: exit %d, want 1", code)
	}
	for _, w := range wants {
		if !strings.Contains(out, "ERROR   projections  "+w+"\n") {
			t.Errorf("check output lacks the error line %q", w)
		}
	}
	if n := strings.Count(out, "ERROR   projections"); n != len(wants) {
		t.Errorf("check reports %d projection errors, want exactly %d (the valid nullable-key projection is not one)", n, len(wants))
	}

	code, out, errOut := runVerb(t, "plan", head+good+bad)
	if code != 1 || out != "" {
		t.Errorf("plan: exit %d with stdout %q; want 1 and no DDL", code, out)
	}
	for _, w := range wants {
		if !strings.Contains(errOut, w+"\n") {
			t.Errorf("plan's stderr lacks %q:\n%s", w, errOut)
		}
	}

	code, out, errOut = runVerb(t, "plan", head+good)
	if code != 0 {
		t.Fatalf("plan of the valid projection: exit %d:\n%s", code, errOut)
	}
	// int(11) on MariaDB, int on MySQL 8.
	if !regexp.MustCompile("`customer_id` int(\\(11\\))? NOT NULL,").MatchString(out) {
		t.Errorf("the nullable key column must be NOT NULL in the read table:\n%s", out)
	}
}
