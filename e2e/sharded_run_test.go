package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// shardedRun is a `readside run` whose config replaces the test bed's one
// sink with sharded sinks over databases of the test bed's server (a
// reshard test's OLD and NEW sinks): head is the config without its
// projections, so a test can write it again with them moved.
type shardedRun struct {
	prefix                 string   // of the databases and the topics
	dbs                    []string // prefix_<name>, in the order named
	head, cfgPath, logPath string
	d                      *daemon
}

// dsn is the DSN of database i of r.dbs.
func (r *shardedRun) dsn(bed *testbed.Bed, i int) string { return bed.MySQL.AdminDSN() + r.dbs[i] }

// newShardedRun creates a database prefix_<name> for each of names and
// returns the run, not started: sinks (start) is written with r.dsn.
func newShardedRun(t *testing.T, bed *testbed.Bed, prefix string, names ...string) *shardedRun {
	t.Helper()
	r := &shardedRun{prefix: prefix}
	for _, n := range names {
		db, err := bed.MySQL.CreateDatabase(t.Context(), prefix+"_"+n)
		if err != nil {
			t.Fatal(err)
		}
		r.dbs = append(r.dbs, db)
	}
	return r
}

// start writes the config (the test bed's head over tables with sinks,
// YAML under `sinks:`, in place of its one sink, then decl) and starts
// `readside run` on it, waiting for the tailer's first checkpoint.
func (r *shardedRun) start(t *testing.T, bed *testbed.Bed, tables []string, sinks, decl string) {
	t.Helper()
	dir := t.TempDir()
	r.head = bedConfigHead(bed, tables, r.prefix, filepath.Join(dir, "data"), "unused")
	one := fmt.Sprintf("  reads:\n    dsn: %q\n", bed.MySQL.AdminDSN()+"unused")
	if !strings.Contains(r.head, one) {
		t.Fatalf("the config head has no %q:\n%s", one, r.head)
	}
	r.head = strings.Replace(r.head, one, sinks, 1)
	r.cfgPath = filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(r.cfgPath, []byte(r.head+decl), 0o600); err != nil {
		t.Fatal(err)
	}
	r.logPath = filepath.Join(dir, "run.log")
	r.d = startDaemon(t, r.logPath, "run", "-c", r.cfgPath)
	waitForCheckpoint(t, bed, topicPrefixOf(t, r.head))
}

// sourceWithSchema creates a source database named after name and runs
// schema there (each statement formatted with the database's name).
func sourceWithSchema(t *testing.T, bed *testbed.Bed, name string, schema []string) string {
	t.Helper()
	src, err := bed.MySQL.CreateDatabase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, s := range schema {
		stmts = append(stmts, fmt.Sprintf(s, src))
	}
	if err := bed.MySQL.Exec(t.Context(), stmts...); err != nil {
		t.Fatal(err)
	}
	return src
}
