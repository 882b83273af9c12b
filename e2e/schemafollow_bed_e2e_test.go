package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// followBed is what the schema-following tests change a source table
// under: a source database, a row-mode sink "reads" and a
// transaction-consistent sink "txn", and a readside config over them whose
// projections are planned (plan --apply), ready for the daemon.
type followBed struct {
	bed                *testbed.Bed
	src, sinkDB, txnDB string
	cfgPath, logPath   string
}

// newFollowBed creates the databases, runs createTable (SRC names the
// source database) and writes the config with projections (YAML under
// projections:, SRC again for the source database).
func newFollowBed(t *testing.T, bed *testbed.Bed, name, table, createTable, projections string) *followBed {
	t.Helper()
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, name)
	txnDB, err := bed.MySQL.CreateDatabase(ctx, name+"_t")
	if err != nil {
		t.Fatal(err)
	}
	f := &followBed{bed: bed, src: src, sinkDB: sinkDB, txnDB: txnDB}
	f.exec(t, createTable)
	dir := t.TempDir()
	head := bedConfigHead(bed, []string{src + "." + table}, name, filepath.Join(dir, "data"), sinkDB)
	head = strings.Replace(head, "projections:\n", fmt.Sprintf("  txn:\n    dsn: %q\n    consistency: transaction\nprojections:\n", bed.MySQL.AdminDSN()+txnDB), 1)
	f.cfgPath, f.logPath = filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
	if err := os.WriteFile(f.cfgPath, []byte(head+strings.ReplaceAll(projections, "SRC", src)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", f.cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("readside plan --apply: %v\n%s", err, out)
	}
	return f
}

// exec runs stmt on the source, SRC naming the source database.
func (f *followBed) exec(t *testing.T, stmt string) {
	t.Helper()
	if err := f.bed.MySQL.Exec(t.Context(), strings.ReplaceAll(stmt, "SRC", "`"+f.src+"`")); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// waitLog waits up to two minutes, or until the daemon exits, for its log
// to hold every one of wants.
func (f *followBed) waitLog(t *testing.T, d *daemon, what string, wants ...string) {
	t.Helper()
	has := func() bool {
		b, _ := os.ReadFile(f.logPath)
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if !testbed.Poll(ctx, 300*time.Millisecond, func() bool { return has() || !d.running() }) || !has() {
		t.Fatalf("%s: the log lacks one of %q; tail:\n%s", what, wants, tail(f.logPath))
	}
}
