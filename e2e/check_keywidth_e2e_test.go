package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestCheckKeyWidth: aggregate projections whose tables would need a key
// wider than the 3072 bytes an InnoDB index holds — a distinct values
// table keyed by three VARCHAR(255) utf8mb4 group columns and a
// VARCHAR(100) value, a read table keyed by four such columns, a min/max
// index of three and a value — are refused by `readside check` and
// `readside plan` before any DDL, each naming the projection, the
// aggregate, the key's width, the limit and the fix, where the server
// would refuse CREATE TABLE with "Specified key was too long". A
// projection whose keys fit to the byte (3060 bytes of group and a
// 3-character value) plans, and its DDL is accepted by the server: the
// widths are the server's.
func TestCheckKeyWidth(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, sinkDB := sourceAndSinkDBs(t, bed, "chkwide")
	wide := "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+db+"`.labels (id INT PRIMARY KEY, a "+wide+", b "+wide+", c "+wide+", d "+wide+
		", name VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, short VARCHAR(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)"); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("source:\n  dsn: %q\n  server_id: %d\n  tables: [%[3]s.labels]\nkafka:\n  brokers: [%s]\nsinks:\n  reads:\n    dsn: %q\nprojections:\n",
		bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), bed.MySQL.AdminDSN()+sinkDB)
	fits := fmt.Sprintf(`  fits:
    from: %s.labels
    sink: reads
    group_by: [a, b, c]
    aggregates: {shorts: "count(distinct short)", top: "max(short)", n: "count(*)"}
`, db)
	bad := fmt.Sprintf(`  wide_distinct:
    from: %[1]s.labels
    sink: reads
    group_by: [a, b, c]
    aggregates: {names: "count(distinct name)"}
  wide_group:
    from: %[1]s.labels
    sink: reads
    group_by: [a, b, c, d]
    aggregates: {names: "count(distinct name)", n: "count(*)"}
  wide_max:
    from: %[1]s.labels
    sink: reads
    group_by: [a, b, c]
    aggregates: {last: "max(name)"}
`, db)
	narrow := "group by narrower columns (a shorter source column, or a columns entry such as CAST(x AS CHAR(n)) listed in group_by) or by fewer of them"
	wants := []string{
		`projections.wide_distinct.aggregates.names "count(distinct name)": its distinct values table _readside_dst_wide_distinct_names's primary key (the group columns and the value) is up to 3460 bytes (a 1020 + b 1020 + c 1020 + value 400), over the 3072 bytes an InnoDB index holds: ` + narrow + `, or a shorter value, e.g. count(distinct CAST(x AS CHAR(3)))`,
		`projections.wide_group.group_by: the read table wide_group's primary key (its group columns) is up to 4080 bytes (a 1020 + b 1020 + c 1020 + d 1020), over the 3072 bytes an InnoDB index holds: ` + narrow,
		`projections.wide_max.aggregates.last "max(name)": the contributions table _readside_agg_wide_max's index of its values (the group columns and the value) is up to 3460 bytes (a 1020 + b 1020 + c 1020 + value 400), over the 3072 bytes an InnoDB index holds: ` + narrow + `, or a shorter value, e.g. max(CAST(x AS CHAR(3)))`,
	}
	out := refusedByCheckAndPlan(t, head+fits+bad, wants)
	if !strings.Contains(out, "ok      projections  1 of 4 projection(s) compile and plan against the source schema") {
		t.Errorf("check does not count fits as the one projection that plans")
	}

	code, out, errOut := runVerb(t, "plan", head+fits)
	if code != 0 {
		t.Fatalf("plan of fits: exit %d\n%s", code, errOut)
	}
	created := createPlanned(t, bed, sinkDB, out)
	// The read table, the contributions table (with max's index) and the
	// distinct values table at least.
	t.Logf("the server ran fits's %d CREATE TABLE statements", created)
	if created < 3 {
		t.Errorf("plan of fits printed %d CREATE TABLE statements, want at least 3:\n%s", created, out)
	}
}

// createPlanned runs the CREATE TABLE statements of plan's output in
// sinkDB, failing t on any the server refuses, and counts them.
func createPlanned(t *testing.T, bed *testbed.Bed, sinkDB, out string) int {
	t.Helper()
	ctx := t.Context()
	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "USE `"+sinkDB+"`"); err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, stmt := range strings.Split(out, ";\n") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		s := strings.TrimSpace(strings.Join(lines, "\n"))
		if !strings.HasPrefix(s, "CREATE TABLE") {
			continue
		}
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Errorf("the server refuses the planned DDL: %v\n%s", err, s)
		}
		created++
	}
	return created
}

// TestCheckPrefixKeys: a source keyed by a prefix of a TEXT column
// (`PRIMARY KEY (url(255))`) or of a long VARCHAR (`code(100)` of a
// VARCHAR(1000) utf8mb4) passed `check`, and `run` stopped the projection
// at CREATE TABLE (error 1170, "BLOB/TEXT column used in key specification
// without a key length", or a key too long) with a fix about drifted read
// tables. readside keys read tables and join state tables by whole values:
// check and plan refuse each such key, naming it and the fix, before any
// DDL; a key of exactly 3072 bytes plans, and the server takes its DDL.
func TestCheckPrefixKeys(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, sinkDB := sourceAndSinkDBs(t, bed, "chkprefix")
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+db+"`.urls (url TEXT NOT NULL, hits INT, PRIMARY KEY (url(255)))",
		"CREATE TABLE `"+db+"`.codes (code VARCHAR(1000) CHARACTER SET utf8mb4 NOT NULL, v INT, PRIMARY KEY (code(100)))",
		"CREATE TABLE `"+db+"`.visits (id INT PRIMARY KEY, url TEXT)",
		"CREATE TABLE `"+db+"`.tags (tag VARCHAR(768) CHARACTER SET utf8mb4 NOT NULL PRIMARY KEY, n INT)"); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("source:\n  dsn: %q\n  server_id: %d\n  tables: [%[3]s.urls, %[3]s.codes, %[3]s.visits, %[3]s.tags]\nkafka:\n  brokers: [%s]\nsinks:\n  reads:\n    dsn: %q\nprojections:\n",
		bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), bed.MySQL.AdminDSN()+sinkDB)
	fits := fmt.Sprintf("  tag_copy: {from: %s.tags, sink: reads, key: [tag], columns: {tag: tag, n: n}}\n", db)
	bad := fmt.Sprintf(`  url_copy: {from: %[1]s.urls, sink: reads, key: [url], columns: {url: url, hits: hits}}
  code_copy: {from: %[1]s.codes, sink: reads, key: [code], columns: {code: code, v: v}}
  visit_hits:
    from: %[1]s.visits
    sink: reads
    key: [id]
    columns: {id: id, url: url}
    join:
      - {from: %[1]s.urls, on: {url: url}, columns: {hits: hits}}
`, db)
	whole := "key the source rows by columns an index holds whole: name a unique NOT NULL index without TEXT/BLOB columns in source.keys (docs/config.md), or make the source column a VARCHAR/VARBINARY"
	wants := []string{
		"projections.url_copy.key: key column url is text, which MySQL indexes only by a prefix (or not at all), and readside keys the read table url_copy by whole values: " + whole,
		"projections.code_copy.key: the read table code_copy is keyed by up to 4000 bytes (code 4000), over the 3072 bytes an InnoDB index holds (a source may key such columns by a prefix; readside keys whole values): key by narrower or fewer columns",
		"projections.visit_hits.join[0].on: key column url is text, which MySQL indexes only by a prefix (or not at all), and readside keys the state table of the join on " + db + ".urls by whole values: " + whole,
	}
	refusedByCheckAndPlan(t, head+fits+bad, wants)
	code, out, errOut := runVerb(t, "plan", head+fits)
	if code != 0 {
		t.Fatalf("plan of tag_copy: exit %d\n%s", code, errOut)
	}
	if n := createPlanned(t, bed, sinkDB, out); n < 1 {
		t.Errorf("plan of tag_copy printed no CREATE TABLE:\n%s", out)
	}
}

// refusedByCheckAndPlan runs check and plan on cfg: check exits 1 with an
// error line for each of wants and no other projection error, plan exits
// 1 with no DDL and names each on stderr. It returns check's output.
func refusedByCheckAndPlan(t *testing.T, cfg string, wants []string) string {
	t.Helper()
	code, out, _ := runVerb(t, "check", cfg)
	t.Logf("readside check:\n%s", out)
	if code != 1 {
		t.Errorf("check: exit %d, want 1", code)
	}
	for _, w := range wants {
		if !strings.Contains(out, "ERROR   projections  "+w+"\n") {
			t.Errorf("check's output lacks %q", w)
		}
	}
	if n := strings.Count(out, "ERROR   projections"); n != len(wants) {
		t.Errorf("check reports %d projection errors, want exactly %d", n, len(wants))
	}
	code, planOut, errOut := runVerb(t, "plan", cfg)
	if code != 1 || planOut != "" {
		t.Errorf("plan: exit %d with stdout %q; want 1 and no DDL", code, planOut)
	}
	for _, w := range wants {
		if !strings.Contains(errOut, w) {
			t.Errorf("plan's stderr lacks %q:\n%s", w, errOut)
		}
	}
	return out
}
