package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestReadTableFollowsSource: `readside run` follows source DDL on a
// projected column by itself, and stops the projection, naming the
// config key and the fix, where it cannot follow without losing values.
//   - Widenings while the daemon runs — VARCHAR(16) → VARCHAR(200), INT →
//     BIGINT, a new ENUM member (between two others), TEXT → MEDIUMTEXT, latin1 → utf8mb4 —
//     each followed by a row that needs it: the read table is altered
//     (logged with the exact ALTER, counted in the metric) and every row
//     lands exactly; under on_error: dlq nothing is dead-lettered.
//   - A joined parent's VARCHAR widened, then a long value: the read
//     table and the join's state table are altered, the value fans out.
//   - DROP COLUMN of a projected column: the projection stops naming
//     projections.<name>.columns.<col>; after the column is removed from
//     the config, `plan --apply` and a restart, every row written after
//     the DROP reaches the read table.
//   - RENAME COLUMN of a projected column: the same stop; remapped to
//     the new name, the rows since the RENAME land.
//   - An ENUM member removed and DATETIME → VARCHAR, then a row whose
//     values the read columns cannot hold: the projection stops naming
//     both columns and the rebuild; the row is not converted, the read
//     columns are not altered.
func TestReadTableFollowsSource(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSinkDBs(t, bed, "follow")
	exec1 := func(stmt string) {
		t.Helper()
		if err := bed.MySQL.Exec(ctx, strings.ReplaceAll(stmt, "SRC", "`"+src+"`")); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec1("CREATE TABLE SRC.items (id INT PRIMARY KEY, name VARCHAR(16) NOT NULL, n INT NOT NULL, st ENUM('a','b') NOT NULL, " +
		"body TEXT NOT NULL, cs VARCHAR(10) CHARACTER SET latin1 NOT NULL, d DATETIME NULL, extra INT NOT NULL DEFAULT 0)")
	createPets(t, bed, src)
	exec1("INSERT INTO SRC.owners VALUES (1, 'bob'), (2, 'ann')")
	exec1("INSERT INTO SRC.pets VALUES (1, 1), (2, 1), (3, 2)")
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	config := func(columns string) string {
		head := bedConfigHead(bed, []string{src + ".items", src + ".owners", src + ".pets"}, "follow", filepath.Join(dir, "data"), sinkDB)
		return head + fmt.Sprintf(`  items_follow:
    from: %[1]s.items
    sink: reads
    key: [id]
    on_error: dlq
    columns: {%[2]s}
%[3]shttp:
  listen: %[4]s
`, src, columns, petsProjection("pets_named", src), httpAddr)
	}
	cfgPath := filepath.Join(dir, "readside.yaml")
	writeConfig := func(cfg string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	planApply := func(what string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, readsideBinary(t), "plan", "--apply", "-c", cfgPath).CombinedOutput()
		t.Logf("%s: readside plan --apply:\n%s", what, out)
		if err != nil {
			t.Fatalf("%s: readside plan --apply: %v", what, err)
		}
	}
	logPath := filepath.Join(dir, "readside.log")
	logText := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	// same polls until the read table shows what the source has, by a
	// query whose every value is exact (lengths and digests for the large
	// body, HEX for the charset column).
	same := func(what, srcCols, readCols string, d *daemon) {
		t.Helper()
		q := "SELECT %s FROM `%s`.%s ORDER BY id"
		want := driftRows(ctx, bed, fmt.Sprintf(q, srcCols, src, "items"))
		var got string
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if !testbed.Poll(wctx, 500*time.Millisecond, func() bool {
			got = driftRows(ctx, bed, fmt.Sprintf(q, readCols, sinkDB, "items_follow"))
			return got == want || !d.running()
		}) || got != want {
			t.Fatalf("%s: read table holds\n%.2000s\nsource holds\n%.2000s\nlog tail:\n%s", what, got, want, tail(logPath))
		}
	}
	// stopped waits until the log holds every one of wants (the
	// projection stopped), then ends the process if it is still up.
	stopped := func(what string, d *daemon, wants ...string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		has := func() bool {
			l := logText()
			for _, w := range wants {
				if !strings.Contains(l, w) {
					return false
				}
			}
			return true
		}
		if !testbed.Poll(wctx, 500*time.Millisecond, func() bool { return has() || !d.running() }) || !has() {
			t.Fatalf("%s: the log lacks one of %q; tail:\n%s", what, wants, tail(logPath))
		}
		if d.running() {
			d.stop(time.Minute)
		}
	}

	all := config("id: id, name: name, n: n, st: st, body: body, cs: cs, d: d, extra: extra")
	writeConfig(all)
	planApply("fresh")
	exec1("INSERT INTO SRC.items VALUES (1, 'short', 7, 'a', 'small', 'ü', '2024-01-02 03:04:05', 1)")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	exact := "id, name, n, st, LENGTH(body), MD5(body), HEX(cs), d"
	same("before any DDL", exact+", extra", exact+", extra", d)

	// Each DDL, then at once a row the read table as created refuses.
	exec1("ALTER TABLE SRC.items MODIFY name VARCHAR(200) NOT NULL")
	exec1("INSERT INTO SRC.items VALUES (2, REPEAT('é', 150), 8, 'b', 'b', 'x', NULL, 2)")
	exec1("ALTER TABLE SRC.items MODIFY n BIGINT NOT NULL")
	exec1("INSERT INTO SRC.items VALUES (3, 'big', 3000000000, 'a', 'c', 'x', NULL, 3)")
	exec1("ALTER TABLE SRC.items MODIFY st ENUM('a','c','b') NOT NULL")
	exec1("INSERT INTO SRC.items VALUES (4, 'enum', 9, 'c', 'd', 'x', NULL, 4)")
	exec1("ALTER TABLE SRC.items MODIFY body MEDIUMTEXT NOT NULL")
	// 80,000 bytes: over TEXT's 65,535, under kafka.max_message_bytes.
	exec1("INSERT INTO SRC.items VALUES (5, 'large', 10, 'a', REPEAT('é', 40000), 'x', NULL, 5)")
	exec1("ALTER TABLE SRC.items MODIFY cs VARCHAR(10) CHARACTER SET utf8mb4 NOT NULL")
	exec1("INSERT INTO SRC.items VALUES (6, 'charset', 11, 'b', 'e', 'ü🙂', NULL, 6)")
	same("after five widenings", exact+", extra", exact+", extra", d)

	// A joined parent's column widened: the read table and the join's
	// state table are altered, and the parent's new value fans out.
	exec1("ALTER TABLE SRC.owners MODIFY oname VARCHAR(200) NOT NULL")
	exec1("UPDATE SRC.owners SET oname = REPEAT('ö', 150) WHERE id = 1")
	wantPets := driftRows(ctx, bed, "SELECT p.id, p.owner_id, o.oname FROM `"+src+"`.pets p JOIN `"+src+"`.owners o ON o.id = p.owner_id ORDER BY p.id")
	var gotPets string
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer pcancel()
	if !testbed.Poll(pctx, 500*time.Millisecond, func() bool {
		gotPets = driftRows(ctx, bed, "SELECT id, owner_id, owner_name FROM `"+sinkDB+"`.pets_named ORDER BY id")
		return gotPets == wantPets || !d.running()
	}) || gotPets != wantPets {
		t.Fatalf("joined parent widened: read table holds\n%s\nwant\n%s\nlog tail:\n%s", gotPets, wantPets, tail(logPath))
	}

	types := driftRows(ctx, bed, "SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '"+sinkDB+
		"' AND TABLE_NAME = 'items_follow' AND COLUMN_NAME IN ('name', 'n', 'st', 'body', 'cs') ORDER BY COLUMN_NAME")
	if want := "body mediumtext utf8mb4\ncs varchar(10) utf8mb4\nn bigint(20) \nname varchar(200) utf8mb4\nst enum('a','c','b') utf8mb4\n"; types != want {
		t.Errorf("read columns after following:\n%s\nwant\n%s", types, want)
	}
	l := logText()
	for _, alter := range []string{"MODIFY COLUMN `name` varchar(200)", "MODIFY COLUMN `n` bigint(20) NOT NULL", "MODIFY COLUMN `st` enum('a','c','b')",
		"MODIFY COLUMN `body` mediumtext", "MODIFY COLUMN `cs` varchar(10) CHARACTER SET utf8mb4",
		"ALTER TABLE `pets_named` MODIFY COLUMN `owner_name` varchar(200)", "ALTER TABLE `_readside_join_pets_named_1` MODIFY COLUMN `c_owner_name` varchar(200)"} {
		if !strings.Contains(l, "read table altered to follow the source's schema") || !strings.Contains(l, alter) {
			t.Errorf("the log does not show the ALTER %q; tail:\n%s", alter, tail(logPath))
		}
	}
	if strings.Contains(l, "dead-lettering") {
		t.Errorf("on_error: dlq dead-lettered a row a widening lets in; tail:\n%s", tail(logPath))
	}
	if got := metric(ctx, t, httpAddr, `readside_projection_read_table_alters_total{projection="items_follow"}`); got < 5 {
		t.Errorf("readside_projection_read_table_alters_total = %v, want at least 5 (one per ALTER)", got)
	}

	// A dropped projected column stops the projection, naming its key.
	exec1("ALTER TABLE SRC.items DROP COLUMN extra")
	exec1("INSERT INTO SRC.items VALUES (7, 'after drop', 12, 'a', 'f', 'x', NULL)")
	exec1("UPDATE SRC.items SET name = 'updated after drop' WHERE id = 1")
	stopped("dropped column", d, "projections.items_follow.columns.extra", "remove projections.items_follow.columns.extra from the config", "readside plan --apply")
	if strings.Contains(logText(), "dead-lettering") {
		t.Errorf("the rows after the DROP were dead-lettered, not held back; tail:\n%s", tail(logPath))
	}
	// The user's fix: the column out of the config, plan --apply (the
	// read column is made nullable), restart. Nothing written since the
	// DROP is lost.
	noExtra := config("id: id, name: name, n: n, st: st, body: body, cs: cs, d: d")
	writeConfig(noExtra)
	planApply("extra removed")
	d = startDaemon(t, logPath, "run", "-c", cfgPath)
	exec1("INSERT INTO SRC.items VALUES (8, 'after restart', 13, 'b', 'g', 'x', NULL)")
	same("after the fix", exact, exact, d)

	// A renamed projected column stops it too; remapped to the new name,
	// the rows since the RENAME land.
	exec1("ALTER TABLE SRC.items RENAME COLUMN name TO title")
	exec1("INSERT INTO SRC.items VALUES (10, 'after rename', 15, 'c', 'i', 'x', NULL)")
	stopped("renamed column", d, "projections.items_follow.columns.name", "map it to the column's new name")
	writeConfig(config("id: id, name: title, n: n, st: st, body: body, cs: cs, d: d"))
	planApply("name remapped")
	d = startDaemon(t, logPath, "run", "-c", cfgPath)
	same("after the remap", strings.Replace(exact, "name", "title", 1), exact, d)

	// An ENUM member removed (a narrowing) and DATETIME → VARCHAR, then
	// a row with a value neither read column holds: no safe ALTER, so the
	// projection stops naming both columns and the rebuild.
	exec1("UPDATE SRC.items SET st = 'a' WHERE st = 'b'")
	exec1("ALTER TABLE SRC.items MODIFY st ENUM('a','c','x') NOT NULL, MODIFY d VARCHAR(30) NULL")
	exec1("INSERT INTO SRC.items VALUES (9, 'lossy', 14, 'x', 'h', 'x', 'next tuesday')")
	stopped("narrowing and lossy type change", d, "projections.items_follow.columns.d", "projections.items_follow.columns.st",
		"cannot follow the source's schema without losing values", "readside replay --projection items_follow --rebuild")
	if got := driftRows(ctx, bed, "SELECT COUNT(*) FROM `"+sinkDB+"`.items_follow WHERE id = 9"); got != "0\n" {
		t.Errorf("row 9 reached the read table (count %q) though its value does not fit: converted or truncated", got)
	}
	if got := driftRows(ctx, bed, "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '"+sinkDB+"' AND TABLE_NAME = 'items_follow' AND COLUMN_NAME IN ('d', 'st') ORDER BY COLUMN_NAME"); got != "datetime\nenum('a','c','b')\n" {
		t.Errorf("read columns d, st are %q after changes readside cannot follow, want datetime and enum('a','c','b') unchanged", got)
	}
}

// metric scrapes /metrics at addr and returns the sample's value (-1:
// absent or unreachable).
func metric(ctx context.Context, t *testing.T, addr, sample string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return -1
}
