package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sqlquote"
)

// TestHostileNames: a source database, tables, columns and projections
// named with a reserved word, a space, a backtick, single and double
// quotes, a dash, non-ASCII letters and the 64-character maximum go
// through `plan --apply`, a snapshot, live changes, `run` and `verify` on
// the real Apache Kafka of the test bed (the embedded broker and kfake
// accept any topic name, so only a real broker shows a refused one).
//   - the long database and table names give a topic over 249
//     characters, which is cut and hash-suffixed;
//   - the projection name (a YAML key) holds a quote and becomes the read
//     table's name and its COMMENT, so `plan --apply` fails with a syntax
//     error if a name reaches a string literal unescaped.
func TestHostileNames(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	// MariaDB stores each non-ASCII or special character of a database
	// or table name as five characters of a file name (255 at most), so
	// the database name is long enough to cut its topic, not 64 letters.
	src := fmt.Sprintf("sel ect`'\"-ünï日本%06d", rand.IntN(1e6)) + strings.Repeat("ü", 30)
	if err := bed.MySQL.Exec(ctx, "CREATE DATABASE "+sqlquote.Ident(src)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.MySQL.Exec(context.Background(), "DROP DATABASE "+sqlquote.Ident(src)) })
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "names_r")
	if err != nil {
		t.Fatal(err)
	}
	longTable := strings.Repeat("t", 59) + "表-ü'x" // 64 characters, MySQL's maximum
	longCol := strings.Repeat("本", 64)
	cols := []string{"a b", "c`d", "e'f", `g"h`, "i-j", "ünï", "日本", longCol}
	var defs []string
	for _, c := range cols {
		defs = append(defs, sqlquote.Ident(c)+" VARCHAR(20) NULL")
	}
	order := sqlquote.Qualified(src, "order")
	long := sqlquote.Qualified(src, longTable)
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+order+" (`select` INT PRIMARY KEY, "+strings.Join(defs, ", ")+")",
		"CREATE TABLE "+long+" (`key` INT PRIMARY KEY, `value` VARCHAR(20) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	insert := func(id int, v string) error {
		vals := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
		args := []any{id}
		for range cols {
			args = append(args, v)
		}
		if _, err := bed.MySQL.DB().ExecContext(ctx, "INSERT INTO "+order+" VALUES (?, "+vals+")", args...); err != nil {
			return err
		}
		_, err := bed.MySQL.DB().ExecContext(ctx, "INSERT INTO "+long+" VALUES (?, ?)", id, v)
		return err
	}
	// Rows before the first start reach the topics by the snapshot.
	for i, v := range []string{"it's", `"q"`, "`b`"} {
		if err := insert(i+1, v); err != nil {
			t.Fatal(err)
		}
	}

	// The projection names and read columns are hostile too: each read
	// column is named like its source column with a suffix.
	proj := "order's \"read\" ünï"
	longProj := "long-" + strings.Repeat("é", 10)
	// A name the sink's default collation (utf8mb4_general_ci: case and
	// accents ignored) takes for longProj: the two must not share the
	// bookkeeping rows keyed by projection name.
	twinProj := "LONG-" + strings.Repeat("e", 10)
	var mapping []string
	for _, c := range cols {
		read := c
		if c == longCol {
			read = strings.Repeat("列", 64)
		} else {
			read = c + " r"
		}
		mapping = append(mapping, fmt.Sprintf("%q: %q", read, c))
	}
	dir := t.TempDir()
	prefix := fmt.Sprintf("names%d", rand.IntN(1e6))
	cfg := fmt.Sprintf(`source:
  dsn: %[1]q
  server_id: %[2]d
  tables: [%[3]q, %[4]q]
kafka:
  brokers: [%[5]s]
  topic_prefix: %[6]s
data_dir: %[7]s
sinks:
  reads:
    dsn: %[8]q
projections:
  %[9]q:
    from: %[3]q
    sink: reads
    key: [sel]
    columns: {sel: select, %[10]s}
  %[11]q:
    from: %[4]q
    sink: reads
    key: ["key"]
    columns: {"key": "key", "value": "value"}
  %[12]q:
    from: %[4]q
    sink: reads
    key: ["key"]
    columns: {"key": "key", "value": "value"}
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), src+".order", src+"."+longTable, strings.Join(bed.Kafka.Brokers(), ", "), prefix,
		filepath.Join(dir, "data"), bed.MySQL.AdminDSN()+sinkDB, proj, strings.Join(mapping, ", "), longProj, twinProj)
	cfgPath := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(verb string, want ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, readsideBinary(t), append(strings.Fields(verb), "-c", cfgPath)...)
		out, err := cmd.CombinedOutput()
		t.Logf("readside %s: %v\n%s", verb, err, out)
		if err != nil {
			t.Fatalf("readside %s: %v\n%s", verb, err, out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("readside %s output lacks %q", verb, w)
			}
		}
	}
	// check refuses a read column in readside's own _rs_ namespace (any
	// case) and one longer than MySQL's 64 characters, naming the key.
	bad := strings.Replace(cfg, "columns: {sel: select, ", "columns: {sel: select, _RS_version: \"a b\", "+strings.Repeat("x", 65)+": \"i-j\", ", 1)
	badPath := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, readsideBinary(t), "check", "-c", badPath).CombinedOutput()
	t.Logf("readside check (bad names): %v\n%s", err, out)
	for _, w := range []string{
		fmt.Sprintf("projections.%s.columns._RS_version: the _rs_ prefix is readside's own: rename the column", proj),
		fmt.Sprintf("projections.%s.columns.%s: 65 characters, MySQL allows at most 64: rename the column", proj, strings.Repeat("x", 65)),
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("readside check output lacks %q", w)
		}
	}
	if code := exitCode(err); code != 1 && code != 2 {
		t.Errorf("readside check with bad names exits %d, want a failure", code)
	}
	run("plan --apply", "CREATE TABLE IF NOT EXISTS `order's \"read\" ünï`", "COMMENT='readside projection order''s \"read\" ünï from ")

	logPath := filepath.Join(dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", cfgPath)
	defer d.stop(time.Minute)
	// Live: two inserts, an update and a delete.
	for i, v := range []string{"ünï", "a\\b"} {
		if err := insert(10+i, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := bed.MySQL.Exec(ctx,
		"UPDATE "+order+" SET "+sqlquote.Ident("e'f")+" = 'upd''ated', "+sqlquote.Ident(longCol)+" = '日本語' WHERE `select` = 2",
		"UPDATE "+long+" SET `value` = 'upd''ated' WHERE `key` = 2",
		"DELETE FROM "+order+" WHERE `select` = 3",
		"DELETE FROM "+long+" WHERE `key` = 3"); err != nil {
		t.Fatal(err)
	}

	srcRows := func(table, key string) string {
		return driftRows(ctx, bed, "SELECT * FROM "+table+" ORDER BY "+sqlquote.Ident(key))
	}
	readRows := func(table string) string {
		return driftRows(ctx, bed, "SELECT * FROM "+sqlquote.Qualified(sinkDB, table)+" ORDER BY 1")
	}
	// Wait for the row counts and the live values; verify then compares
	// every value with the source.
	wantOrder, wantLong := srcRows(order, "select"), srcRows(long, "key")
	var gotOrder, gotLong string
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	done := func() bool {
		return lines(gotOrder) == lines(wantOrder) && lines(gotLong) == lines(wantLong) &&
			strings.Contains(gotOrder, "upd'ated") && strings.Contains(gotOrder, "日本語") && strings.Contains(gotOrder, `a\b`) &&
			strings.Contains(gotLong, "upd'ated") && strings.Contains(gotLong, `a\b`)
	}
	if !testbed.Poll(wctx, 500*time.Millisecond, func() bool {
		gotOrder, gotLong = readRows(proj), readRows(longProj)
		return done() || !d.running()
	}) || !done() {
		t.Fatalf("read tables hold\n%s\n%s\nwant the rows of\n%s\n%s\nlog tail:\n%s", gotOrder, gotLong, wantOrder, wantLong, tail(logPath))
	}
	if lines(gotOrder) != 4 || lines(gotLong) != 4 {
		t.Errorf("read tables hold %d and %d rows, want 4 each (3 snapshot + 2 live − 1 delete)", lines(gotOrder), lines(gotLong))
	}
	run("verify", proj+": EQUAL", longProj+": EQUAL", twinProj+": EQUAL")
	for _, table := range []string{"_readside_offsets", "_readside_watermarks"} {
		var names int
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(DISTINCT projection) FROM "+sqlquote.Qualified(sinkDB, table)).Scan(&names); err != nil {
			t.Fatal(err)
		}
		if names != 3 {
			t.Errorf("%s holds the rows of %d projections, want 3 (%s and %s are two)", table, names, longProj, twinProj)
		}
	}

	// Every topic readside wrote is on the real broker under the mapped
	// name; the long table's is cut to Kafka's 249 characters.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []string{event.TopicFor(prefix, src, "order"), event.TopicFor(prefix, src, longTable)} {
		if !listed.Has(tp) {
			t.Errorf("topic %q is not on the broker; it has %q", tp, listed.Names())
		}
	}
	if tp := event.TopicFor(prefix, src, longTable); len(tp) != event.MaxTopicLen {
		t.Errorf("the long table's topic %q is %d characters, want it cut to %d", tp, len(tp), event.MaxTopicLen)
	}
	if code := d.stop(time.Minute); code != 0 {
		t.Errorf("readside run exit %d on SIGTERM; log:\n%s", code, tail(logPath))
	}
}

func lines(s string) int { return strings.Count(s, "\n") }

// exitCode is a command's exit code, 0 when err is nil.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
