package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestSystemVersionedTables: MariaDB's system-versioned tables keep past
// versions of a row in the table, and the binlog shows it: an UPDATE is
// the row updated plus an INSERT of its old version, a DELETE an UPDATE
// that closes the row's ROW END. Published as they came, the old version
// overwrote every update in the read table and no deleted row ever left
// it. Read tables of a table versioned implicitly (WITH SYSTEM
// VERSIONING), of one with named period columns (whose primary key
// MariaDB widens by its ROW END column) and of one made versioned while
// readside runs equal the tables' current rows, through the snapshot,
// live changes, key changes, DELETE HISTORY and a kill -9.
func TestSystemVersionedTables(t *testing.T) {
	bed := testbed.Get(t)
	src, sink := sourceAndSinkDBs(t, bed, "sysver")
	exec := func(stmts ...string) {
		t.Helper()
		if err := bed.MySQL.Exec(t.Context(), stmts...); err != nil {
			t.Fatal(err)
		}
	}
	q := func(table string) string { return "`" + src + "`." + table }
	exec("CREATE TABLE "+q("implicit")+" (id INT PRIMARY KEY, name VARCHAR(20)) WITH SYSTEM VERSIONING",
		"CREATE TABLE "+q("named")+" (id INT PRIMARY KEY, name VARCHAR(20), rs TIMESTAMP(6) GENERATED ALWAYS AS ROW START INVISIBLE,"+
			" re TIMESTAMP(6) GENERATED ALWAYS AS ROW END INVISIBLE, PERIOD FOR SYSTEM_TIME(rs, re)) WITH SYSTEM VERSIONING",
		"CREATE TABLE "+q("later")+" (id INT PRIMARY KEY, name VARCHAR(20))")
	for _, table := range []string{"implicit", "named", "later"} {
		// History before the start: the snapshot reads current rows.
		exec("INSERT INTO "+q(table)+" VALUES (1, 'one'), (2, 'two'), (3, 'three')",
			"UPDATE "+q(table)+" SET name = 'TWO' WHERE id = 2", "DELETE FROM "+q(table)+" WHERE id = 3")
	}
	dir := t.TempDir()
	cfg := bedConfigHead(bed, []string{src + ".implicit", src + ".named", src + ".later"}, "sysver", filepath.Join(dir, "data"), sink)
	for _, table := range []string{"implicit", "named", "later"} {
		cfg += fmt.Sprintf("  %s: {from: %s.%s, sink: reads, key: [id], columns: {id: id, name: name}}\n", table, src, table)
	}
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, cfgPath, "the read tables", "plan --apply", 0)
	logPath := filepath.Join(dir, "run.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	defer d.stop(30 * time.Second)
	utc := utcDB(t, bed)
	expect := func() []struct{ name, want, got string } {
		var out []struct{ name, want, got string }
		for _, table := range []string{"implicit", "named", "later"} {
			out = append(out, struct{ name, want, got string }{table, "SELECT id, name FROM " + q(table) + " ORDER BY id",
				"SELECT id, name FROM `" + sink + "`.`" + table + "` ORDER BY id"})
		}
		return out
	}
	waitExpected(t, utc, expect(), logPath)

	exec("ALTER TABLE " + q("later") + " ADD SYSTEM VERSIONING")
	for _, table := range []string{"implicit", "named", "later"} {
		exec("UPDATE "+q(table)+" SET name = 'ONE' WHERE id = 1",
			"INSERT INTO "+q(table)+" VALUES (4, 'four'), (5, 'five')",
			"DELETE FROM "+q(table)+" WHERE id = 2",
			"UPDATE "+q(table)+" SET id = 6 WHERE id = 4",
			"INSERT INTO "+q(table)+" VALUES (2, 'two again')")
	}
	waitExpected(t, utc, expect(), logPath)
	d.kill9()
	for _, table := range []string{"implicit", "named", "later"} {
		exec("UPDATE "+q(table)+" SET name = CONCAT(name, '!')",
			"DELETE HISTORY FROM "+q(table),
			"DELETE FROM "+q(table)+" WHERE id = 5")
	}
	d.start()
	waitExpected(t, utc, expect(), logPath)
}
