package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// runCheck runs `readside check` on a config and returns its exit code
// and output.
func runCheck(t *testing.T, cfg string, env ...string) (int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), readsideBinary(t), "check", "-c", path)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func checkConfig(dsn, table string, brokers []string, sinkDSN string) string {
	cfg := fmt.Sprintf("source:\n  dsn: %q\n  server_id: %d\n  tables: [%s]\nkafka:\n  brokers: [%s]\n", dsn, testbed.NewServerID(), table, strings.Join(brokers, ", "))
	if sinkDSN != "" {
		cfg += fmt.Sprintf("sinks:\n  reads:\n    dsn: %q\nprojections:\n  items_copy:\n    from: %s\n    sink: reads\n    key: [id]\n    columns: {id: id, name: name}\n", sinkDSN, table)
	}
	return cfg
}

// TestCheckStatementFormat: a source running binlog_format=STATEMENT makes
// check exit 1 naming the setting and both halves of the fix. The same
// source runs binlog_row_metadata=NO_LOG (MariaDB's default), which readside
// runs with (it keeps a schema history): a warning naming that cost, not a
// problem, so once the format is fixed check exits 0.
func TestCheckStatementFormat(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := testbed.StartMariaDBArgs(ctx, filepath.Join(bed.Dir(), "stmt-source"), nil, "--binlog-format=STATEMENT", "--binlog-row-metadata=NO_LOG")
	t.Cleanup(func() {
		if src != nil {
			if err := src.Close(); err != nil {
				t.Errorf("closing the STATEMENT source: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Exec(ctx, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20))"); err != nil {
		t.Fatal(err)
	}
	cfg := checkConfig(src.ReplDSN(), "shop.items", bed.Kafka.Brokers(), "")
	code, out := runCheck(t, cfg)
	t.Logf("readside check:\n%s", out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	noLog := []string{"WARNING source       source binlog_row_metadata is NO_LOG, not FULL", "keeps a schema history", "maps columns by position", "FULL is recommended", "fix: SET GLOBAL binlog_row_metadata=FULL"}
	for _, want := range append([]string{"binlog_format is STATEMENT, readside needs ROW", "fix: SET GLOBAL binlog_format=ROW", "my.cnf", "1 problem(s)"}, noLog...) {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q", want)
		}
	}

	if err := src.Exec(ctx, "SET GLOBAL binlog_format=ROW"); err != nil {
		t.Fatal(err)
	}
	code, out = runCheck(t, cfg)
	t.Logf("readside check, ROW and NO_LOG:\n%s", out)
	if code != 0 {
		t.Errorf("binlog_row_metadata=NO_LOG alone: exit %d, want 0 (a warning)", code)
	}
	for _, want := range append([]string{"binlog_format is ROW", "0 problem(s)"}, noLog...) {
		if !strings.Contains(out, want) {
			t.Errorf("check output with ROW and NO_LOG lacks %q", want)
		}
	}
}

// TestCheckGrants: a replication user without REPLICATION SLAVE makes
// check exit 1 naming the grant and the GRANT statement; the test bed's
// properly granted user passes every check, projections and sink included.
func TestCheckGrants(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "chk")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "chk_r")
	if err != nil {
		t.Fatal(err)
	}
	table := db + ".items"
	user := fmt.Sprintf("rsnorepl%d", rand.IntN(1e6))
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+db+"`.items (id INT PRIMARY KEY, name VARCHAR(20))",
		"CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'",
		"GRANT "+bed.MySQL.Dialect().BinlogMonitorPrivilege+", SELECT ON *.* TO '"+user+"'@'%'",
		"GRANT CREATE, INSERT, UPDATE, DELETE ON readside.* TO '"+user+"'@'%'",
	); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.MySQL.Exec(ctx, "DROP USER '"+user+"'@'%'") })
	sink := bed.MySQL.AdminDSN() + sinkDB

	code, out := runCheck(t, checkConfig(bed.MySQL.ReplDSN(), table, bed.Kafka.Brokers(), sink))
	if code != 0 {
		t.Fatalf("the test bed's replication user: exit %d, want 0:\n%s", code, out)
	}
	for _, want := range []string{"has the grants readside needs", "binlog_format is ROW", "broker cluster", "reachable and writable", "1 projection(s) compile and plan"} {
		if !strings.Contains(out, want) {
			t.Errorf("clean check lacks %q:\n%s", want, out)
		}
	}

	dsn := fmt.Sprintf("%s:pw@tcp(%s)/", user, bed.MySQL.Addr())
	code, out = runCheck(t, checkConfig(dsn, table, bed.Kafka.Brokers(), sink))
	t.Logf("readside check:\n%s", out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"lacks REPLICATION SLAVE", "fix: GRANT REPLICATION SLAVE ON *.* TO '" + user + "'@'%';", "1 problem(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q", want)
		}
	}
}

// TestCheckMaskedMembersGrant: a copied ENUM column with a member outside
// the Basic Multilingual Plane ('👍', shown as '?' by information_schema)
// gets its read column's exact names through a temporary table: a source
// user that may not create one makes check exit 1 naming the column and
// the grant (not the SELECT grant a refused read usually means), and once
// granted, check passes.
func TestCheckMaskedMembersGrant(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "chkm")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "chkm_r")
	if err != nil {
		t.Fatal(err)
	}
	table := db + ".items"
	user := fmt.Sprintf("rsnotmp%d", rand.IntN(1e6))
	if err := bed.MySQL.Exec(ctx,
		"CREATE DATABASE IF NOT EXISTS readside", // the signal database, as a first run makes it
		"CREATE TABLE `"+db+"`.items (id INT PRIMARY KEY, name ENUM('👍','ok') CHARACTER SET utf8mb4)",
		"CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'",
		"GRANT REPLICATION SLAVE, "+bed.MySQL.Dialect().BinlogMonitorPrivilege+", SELECT ON *.* TO '"+user+"'@'%'",
		"GRANT CREATE, INSERT, UPDATE, DELETE ON readside.* TO '"+user+"'@'%'",
	); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.MySQL.Exec(ctx, "DROP USER '"+user+"'@'%'") })
	dsn := fmt.Sprintf("%s:pw@tcp(%s)/", user, bed.MySQL.Addr())
	cfg := checkConfig(dsn, table, bed.Kafka.Brokers(), bed.MySQL.AdminDSN()+sinkDB)

	code, out := runCheck(t, cfg)
	t.Logf("readside check:\n%s", out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"reading the ENUM member names of " + table + ".name", "fix: GRANT CREATE TEMPORARY TABLES ON `readside`.*", "1 problem(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q", want)
		}
	}
	if strings.Contains(out, "grant the source user SELECT") {
		t.Errorf("check output blames the SELECT grant")
	}
	if strings.Contains(out, "fix: fix the declaration") {
		t.Errorf("check output shows the declaration's fix for a problem that names its own")
	}

	if err := bed.MySQL.Exec(ctx, "GRANT CREATE TEMPORARY TABLES ON readside.* TO '"+user+"'@'%'"); err != nil {
		t.Fatal(err)
	}
	if code, out := runCheck(t, cfg); code != 0 || !strings.Contains(out, "1 projection(s) compile and plan") {
		t.Errorf("with the grant: exit %d, want 0:\n%s", code, out)
	}
}
