package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestForeignKeyCascadeDrift: InnoDB applies ON DELETE SET NULL and ON
// DELETE CASCADE to a child table without a binlog event, so the read
// model of the child keeps what the source changed. check names both
// constraints (a warning: exit 0), the drift is there after the daemon
// has read past the parent's delete (the control), verify finds it
// (exit 1: a different row and an extra one), verify --repair fixes it
// and verify is EQUAL again.
func TestForeignKeyCascadeDrift(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "fkc")
	q := func(tbl string) string { return "`" + src + "`." + tbl }
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+q("owners")+" (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB",
		"CREATE TABLE "+q("pets_null")+" (id INT PRIMARY KEY, owner_id INT NULL, CONSTRAINT pets_null_owner FOREIGN KEY (owner_id) REFERENCES "+q("owners")+" (id) ON DELETE SET NULL) ENGINE=InnoDB",
		"CREATE TABLE "+q("pets_gone")+" (id INT PRIMARY KEY, owner_id INT NOT NULL, CONSTRAINT pets_gone_owner FOREIGN KEY (owner_id) REFERENCES "+q("owners")+" (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB",
		"INSERT INTO "+q("owners")+" VALUES (1, 'ann'), (2, 'bob')",
		"INSERT INTO "+q("pets_null")+" VALUES (1, 1), (2, 2)",
		"INSERT INTO "+q("pets_gone")+" VALUES (1, 1), (2, 2)",
	); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := bedConfigHead(bed, []string{src + ".owners", src + ".pets_null", src + ".pets_gone"}, "fkc", filepath.Join(dir, "data"), sinkDB) + fmt.Sprintf(`  pets_null_copy:
    from: %[1]s.pets_null
    sink: reads
    key: [id]
    columns: {id: id, owner_id: owner_id}
  pets_gone_copy:
    from: %[1]s.pets_gone
    sink: reads
    key: [id]
    columns: {id: id, owner_id: owner_id}
`, src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, cfgPath, "cascading foreign keys", "check", 0,
		"WARNING source       foreign key pets_null_owner of captured table "+src+".pets_null (owner_id) references "+src+".owners (id): ON DELETE SET NULL: deleting a row of "+src+".owners sets "+src+".pets_null.owner_id to NULL",
		"foreign key pets_gone_owner of captured table "+src+".pets_gone (owner_id) references "+src+".owners (id): ON DELETE CASCADE: deleting a row of "+src+".owners deletes the rows of "+src+".pets_gone",
		"ON UPDATE CASCADE: changing "+src+".owners.id",
		"without writing them to the binlog", "read tables of projection(s) pets_null_copy keep them", "read tables of projection(s) pets_gone_copy keep them",
		"fix: make the application do the cascade in SQL", "readside verify --projection pets_null_copy --repair", "readside verify --projection pets_gone_copy --repair",
		"0 problem(s)")

	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	read := func(table string) string {
		return driftRows(ctx, bed, "SELECT id, owner_id FROM `"+sinkDB+"`."+table+" ORDER BY id")
	}
	wait := func(what, want string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		var null, gone string
		if !testbed.Poll(wctx, 200*time.Millisecond, func() bool {
			null, gone = read("pets_null_copy"), read("pets_gone_copy")
			return (null == want && gone == want) || !d.running()
		}) || null != want || gone != want {
			t.Fatalf("%s: read tables hold\n%s\nand\n%s\nwant both\n%s\nlog tail:\n%s", what, null, gone, want, tail(logPath))
		}
	}
	wait("snapshot", "1 1\n2 2\n")

	// The parent's delete cascades on the source; a row written after it
	// shows the daemon has read past it.
	if err := bed.MySQL.Exec(ctx, "DELETE FROM "+q("owners")+" WHERE id = 1",
		"INSERT INTO "+q("pets_null")+" VALUES (3, 2)", "INSERT INTO "+q("pets_gone")+" VALUES (3, 2)"); err != nil {
		t.Fatal(err)
	}
	if got := driftRows(ctx, bed, "SELECT id, owner_id FROM "+q("pets_null")+" ORDER BY id") + driftRows(ctx, bed, "SELECT id, owner_id FROM "+q("pets_gone")+" ORDER BY id"); got != "1 <nil>\n2 2\n3 2\n2 2\n3 2\n" {
		t.Fatalf("the source did not cascade: children now\n%s", got)
	}
	// The control: the read model still holds what the cascade changed.
	wait("after the parent's delete", "1 1\n2 2\n3 2\n")

	expectReadside(t, cfgPath, "SET NULL drift", "verify --projection pets_null_copy --settle 3s", 1,
		"pets_null_copy: DRIFT", "missing 0, extra 0, different 1", "owner_id: source NULL, sink \"1\"")
	expectReadside(t, cfgPath, "CASCADE drift", "verify --projection pets_gone_copy --settle 3s", 1,
		"pets_gone_copy: DRIFT", "missing 0, extra 1, different 0")
	expectReadside(t, cfgPath, "repair", "verify --repair --settle 3s", 0,
		"pets_null_copy: DRIFT", "pets_gone_copy: DRIFT", "0 key(s) still differ")
	expectReadside(t, cfgPath, "after the repair", "verify", 0, "pets_null_copy: EQUAL", "pets_gone_copy: EQUAL")
	if got := read("pets_null_copy") + read("pets_gone_copy"); got != "1 <nil>\n2 2\n3 2\n2 2\n3 2\n" {
		t.Errorf("after the repair the read tables hold\n%s", got)
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Errorf("readside run exit %d on SIGTERM; log:\n%s", code, tail(logPath))
	}
}
