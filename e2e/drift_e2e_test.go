package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestReadTableDrift: a read table that no longer fits its declaration is
// found by `check` (exit 1 naming the column and the ALTER) and brought
// back to the plan by `plan --apply`, after which `run` applies the rows
// the old table refused.
//   - The source widens a projected column (VARCHAR(16) → VARCHAR(200)):
//     check names the column and the MODIFY, plan --apply runs it, check
//     passes, and a 150-character value reaches the read table.
//   - A column is removed from the projection's columns while the read
//     table keeps it NOT NULL without a default (every insert would fail
//     with "doesn't have a default value"): check names it, plan --apply
//     makes it nullable (the DROP is only printed), run applies new rows.
//   - A new source column is added to columns: check names the ADD
//     COLUMN, plan --apply adds it (nullable), run fills it for new rows.
//   - The source narrows the column again (VARCHAR(160)): check names the
//     rebuild, plan --apply exits 1 naming it and alters nothing.
func TestReadTableDrift(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "drift")
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.items (id INT PRIMARY KEY, name VARCHAR(16) NOT NULL, conv BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := func(columns string) string {
		return bedConfigHead(bed, []string{src + ".items"}, "drift", filepath.Join(dir, "data"), sinkDB) + fmt.Sprintf(`  items_copy:
    from: %s.items
    sink: reads
    key: [id]
    columns: {%s}
`, src, columns)
	}
	// expect runs a verb and fails unless it exits with code and prints
	// every one of wants (stdout and stderr together).
	cfgPath := filepath.Join(dir, "readside.yaml")
	expect := func(what, verb, cfg string, code int, wants ...string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		expectReadside(t, cfgPath, what, verb, code, wants...)
	}

	all := config("id: id, name: name, conv: conv")
	expect("fresh", "plan --apply", all, 0)
	expect("fresh", "check", all, 0, "0 problem(s)")

	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.items MODIFY name VARCHAR(200) NOT NULL"); err != nil {
		t.Fatal(err)
	}
	widen := "ALTER TABLE `items_copy` MODIFY COLUMN `name` varchar(200) CHARACTER SET"
	expect("source column widened", "check", all, 1, "projection items_copy: read table items_copy column name", "varchar(16) on the sink", "fix: readside plan --apply, which runs "+widen, "1 problem(s)")
	expect("source column widened", "plan --apply", all, 0, widen)
	expect("after plan --apply", "check", all, 0, "0 problem(s)")

	noConv := config("id: id, name: name")
	toNull := "ALTER TABLE `items_copy` MODIFY COLUMN `conv` bigint(20) NULL"
	expect("conv no longer projected", "check", noConv, 1, "column conv", "doesn't have a default value", toNull, "DROP COLUMN `conv`", "1 problem(s)")
	expect("conv no longer projected", "plan --apply", noConv, 0, toNull+";", "DROP COLUMN `conv`")
	// Nullable now, rows apply: what is left is a warning naming the DROP.
	expect("conv nullable", "check", noConv, 0, "0 problem(s), 1 warning(s)", "ALTER TABLE `items_copy` DROP COLUMN `conv`")

	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.items ADD COLUMN note VARCHAR(10) NOT NULL DEFAULT 'n'"); err != nil {
		t.Fatal(err)
	}
	withNote := config("id: id, name: name, note: note")
	add := "ALTER TABLE `items_copy` ADD COLUMN `note` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL"
	expect("note added to columns", "check", withNote, 1, "column note", "the column is declared but the read table has none", add, "1 problem(s)")
	expect("note added to columns", "plan --apply", withNote, 0, add+";")
	expect("note added", "check", withNote, 0, "0 problem(s), 1 warning(s)")

	long := strings.Repeat("é", 150)
	if err := bed.MySQL.Exec(ctx, "INSERT INTO `"+src+"`.items VALUES (1, '"+long+"', 7, 'a')"); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	if err := bed.MySQL.Exec(ctx, "INSERT INTO `"+src+"`.items VALUES (2, '"+strings.Repeat("x", 150)+"', 8, 'b')"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("1 %s <nil> a\n2 %s <nil> b\n", long, strings.Repeat("x", 150))
	var got string
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if !testbed.Poll(wctx, 500*time.Millisecond, func() bool {
		got = driftRows(ctx, bed, "SELECT id, name, conv, note FROM `"+sinkDB+"`.items_copy ORDER BY id")
		return got == want || !d.running()
	}) || got != want {
		t.Fatalf("read table holds\n%s\nwant\n%s\nlog tail:\n%s", got, want, tail(logPath))
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Errorf("readside run exit %d on SIGTERM; log:\n%s", code, tail(logPath))
	}

	// A narrowing could lose values: check names the rebuild, and plan
	// --apply refuses (exit 1) and leaves the read column as it was.
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.items MODIFY name VARCHAR(160) NOT NULL"); err != nil {
		t.Fatal(err)
	}
	rebuild := "readside replay --projection items_copy --rebuild"
	expect("source column narrowed", "check", withNote, 1, "column name", "varchar(200) on the sink", "fix: "+rebuild, "could lose values")
	expect("source column narrowed", "plan --apply", withNote, 1, "-- not applied (values could be lost): ALTER TABLE `items_copy` MODIFY COLUMN `name` varchar(160)", "-- instead: "+rebuild)
	var typ string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'items_copy' AND COLUMN_NAME = 'name'", sinkDB).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "varchar(200)" {
		t.Errorf("after plan --apply refused the narrowing the read column is %s, want varchar(200) unchanged", typ)
	}
}

// driftRows renders a query's rows one a line, columns space-separated,
// NULL as <nil>; an error is the text of the result, so a poll goes on.
func driftRows(ctx context.Context, bed *testbed.Bed, query string) string {
	rows, err := bed.MySQL.DB().QueryContext(ctx, query)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err.Error()
		}
		var line []string
		for _, v := range vals {
			if !v.Valid {
				v.String = "<nil>"
			}
			line = append(line, v.String)
		}
		b.WriteString(strings.Join(line, " ") + "\n")
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return b.String()
}

// TestJoinStateDrift: a join's state table holds the parent's copied
// columns with the read columns' types, so a parent column widened at the
// source leaves it too narrow. `check` names the state table's column and
// its ALTER (beside the read table's), `plan --apply` runs both, and
// `check` passes again.
func TestJoinStateDrift(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "jsdrift")
	createPets(t, bed, src)
	dir := t.TempDir()
	cfg := bedConfigHead(bed, []string{src + ".owners", src + ".pets"}, "jsdrift", filepath.Join(dir, "data"), sinkDB) + petsProjection("pets_owned", src)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	expect := func(what, verb string, code int, wants ...string) {
		t.Helper()
		expectReadside(t, cfgPath, what, verb, code, wants...)
	}

	expect("fresh", "plan --apply", 0)
	expect("fresh", "check", 0, "0 problem(s)")

	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+src+"`.owners MODIFY oname VARCHAR(200) NOT NULL"); err != nil {
		t.Fatal(err)
	}
	state := "_readside_join_pets_owned_1"
	widenState := "ALTER TABLE `" + state + "` MODIFY COLUMN `c_owner_name` varchar(200) CHARACTER SET"
	widenRead := "ALTER TABLE `pets_owned` MODIFY COLUMN `owner_name` varchar(200) CHARACTER SET"
	expect("parent column widened", "check", 1,
		"projection pets_owned: join state table "+state+" column c_owner_name", "varchar(16) on the sink",
		"fix: readside plan --apply, which runs "+widenState, widenRead, "2 problem(s)")
	expect("parent column widened", "plan --apply", 0, "-- "+state+".c_owner_name drifted", widenState, widenRead)
	expect("after plan --apply", "check", 0, "0 problem(s)")

	var typ string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = 'c_owner_name'", sinkDB, state).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "varchar(200)" {
		t.Errorf("after plan --apply the state table's copied column is %s, want varchar(200)", typ)
	}
}

// expectReadside runs `readside VERB -c cfgPath` and checks its exit code
// is code and its output holds each of wants; what names the step.
func expectReadside(t *testing.T, cfgPath, what, verb string, code int, wants ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), readsideBinary(t), append(strings.Fields(verb), "-c", cfgPath)...)
	outb, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	got, out := cmd.ProcessState.ExitCode(), string(outb)
	t.Logf("%s: readside %s exit %d:\n%s", what, verb, got, out)
	if got != code {
		t.Errorf("%s: readside %s exit %d, want %d", what, verb, got, code)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s: readside %s output lacks %q", what, verb, w)
		}
	}
}

// createPets creates owners and the pets joined to them in database db: a
// joined parent with a narrow VARCHAR for the drift and schema-following
// tests to widen.
func createPets(t *testing.T, bed *testbed.Bed, db string) {
	t.Helper()
	if err := bed.MySQL.Exec(t.Context(),
		"CREATE TABLE `"+db+"`.owners (id INT PRIMARY KEY, oname VARCHAR(16) NOT NULL)",
		"CREATE TABLE `"+db+"`.pets (id INT PRIMARY KEY, owner_id INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
}

// petsProjection is the config YAML, under projections:, of projection
// name: pets with their owner's name joined in.
func petsProjection(name, db string) string {
	return fmt.Sprintf(`  %[1]s:
    from: %[2]s.pets
    sink: reads
    key: [id]
    columns: {id: id, owner_id: owner_id}
    join:
      - from: %[2]s.owners
        on: {id: owner_id}
        columns: {owner_name: oname}
`, name, db)
}
