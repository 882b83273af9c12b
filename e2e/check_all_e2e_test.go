package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestCheckListsEveryProblem: projections with different kinds of problem
// — declaration ones (an unknown aggregate function, count(DISTINCT a, b), a
// join column clashing with an aggregate's group column, a join on a
// source column that a misspelt mapping does not copy) and live-schema
// ones (a child order_by column, a source column and that misspelt source
// column, none of which exist on the server; a source table that does not
// exist and a parent column of its join) — are all listed by one run of
// `readside check` and of `readside plan`, each under its key with its
// cause, and both exit 1. A projection with a declaration problem is
// still checked against the source, without the checks that depend on
// what failed (no "on names [] but the primary key is [id]" after its join
// on was refused), and a projection whose own table is missing still has
// its join checked. With a config that does not validate (a projection's
// on_error, an unknown key), check and plan list those problems and every
// other projection's still.
func TestCheckListsEveryProblem(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, sinkDB := sourceAndSinkDBs(t, bed, "chkall")
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+db+"`.authors (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL)",
		"CREATE TABLE `"+db+"`.posts (id INT PRIMARY KEY, author_id INT NOT NULL, title VARCHAR(50) NOT NULL)",
		"CREATE TABLE `"+db+"`.comments (id INT PRIMARY KEY, post_id INT NOT NULL, body VARCHAR(200) NOT NULL, created_at DATETIME NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("source:\n  dsn: %q\n  server_id: %d\n  tables: [%[3]s.posts, %[3]s.authors, %[3]s.comments]\nkafka:\n  brokers: [%s]\nsinks:\n  reads:\n    dsn: %q\nprojections:\n",
		bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), bed.MySQL.AdminDSN()+sinkDB)
	decls := fmt.Sprintf(`  a_unknown_aggregate:
    from: %[1]s.posts
    sink: reads
    group_by: [author_id]
    aggregates: {n: "median(id)"}
  b_child_order:
    from: %[1]s.posts
    sink: reads
    key: [id]
    columns: {id: id, title: title}
    children:
      comments:
        from: %[1]s.comments
        on: {post_id: id}
        columns: {body: body}
        order_by: [posted_at]
  c_misspelt:
    from: %[1]s.posts
    sink: reads
    key: [id]
    columns: {id: id, author_id: authr_id}
    join:
      - from: %[1]s.authors
        on: {id: author_id}
        columns: {author_name: name}
  d_missing_column:
    from: %[1]s.posts
    sink: reads
    key: [id]
    columns: {id: id, subtitle: subtitle}
  e_distinct:
    from: %[1]s.posts
    sink: reads
    group_by: [author_id]
    aggregates: {readers: "count(distinct id, title)", posts: "count(*)"}
  f_group_clash:
    from: %[1]s.posts
    sink: reads
    group_by: [author_id]
    aggregates: {posts: "count(*)"}
    join:
      - from: %[1]s.authors
        on: {id: author_id}
        columns: {author_id: id, author_name: name}
  h_no_table:
    from: %[1]s.drafts
    sink: reads
    key: [id]
    columns: {id: id, author_id: author_id}
    join:
      - from: %[1]s.authors
        on: {id: author_id}
        columns: {author_name: nam}
  g_fine:
    from: %[1]s.posts
    sink: reads
    key: [id]
    columns: {id: id, title: title}
`, db)
	forms := "count(*), count(expr), count(distinct expr), sum(expr), sum(distinct expr), min(expr), max(expr), avg(expr), count_if(cond) and sum_if(cond, expr)"
	// Each: the key, the cause and the fix.
	wants := []string{
		`projections.a_unknown_aggregate.aggregates.n "median(id)": unknown aggregate function "median": the supported aggregates are ` + forms,
		`projections.b_child_order.children.comments.order_by[0]: column "posted_at" does not exist in ` + db + `.comments (its columns: id, post_id, body, created_at): name one of its columns`,
		`projections.c_misspelt.join[0].on.id: source column "author_id" is not mapped in projections.c_misspelt.columns: add it (fan-out finds the read rows by it); projections.c_misspelt.columns.author_id copies source column "authr_id", not author_id: if "authr_id" is misspelt, map author_id: author_id`,
		`projections.c_misspelt.columns.author_id: source column "authr_id" does not exist in ` + db + `.posts (its columns: id, author_id, title): map author_id to one of them`,
		`projections.d_missing_column.columns.subtitle: source column "subtitle" does not exist in ` + db + `.posts (its columns: id, author_id, title): map subtitle to one of them`,
		`projections.e_distinct.aggregates.readers "count(distinct id, title)": count(DISTINCT …) of 2 expressions is not supported: count(distinct expr) takes one expression (to count distinct pairs, count one expression combining them, e.g. count(distinct CONCAT(a, '/', b)))`,
		`projections.f_group_clash.join[0].columns.author_id: author_id is already a column of projections.f_group_clash.group_by (a group column): rename one of them`,
		`projections.h_no_table.from ` + db + `.drafts is not in source.tables: add it there`,
		`projections.h_no_table.from: ` + db + `.drafts does not exist on the source: correct from, create the table, or grant the source user SELECT on it`,
		`projections.h_no_table.join[0].columns.author_name: parent column "nam" does not exist in ` + db + `.authors (its columns: id, name): map author_name to one of them`,
	}

	assertAll := func(what, out, prefix string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, prefix+w) {
				t.Errorf("%s lacks %q", what, prefix+w)
			}
		}
	}
	code, out, _ := runVerb(t, "check", head+decls)
	t.Logf("readside check:\n%s", out)
	if code != 1 {
		t.Errorf("check: exit %d, want 1", code)
	}
	assertAll("check's output", out, "ERROR   projections  ")
	if n := strings.Count(out, "ERROR   projections"); n != len(wants) {
		t.Errorf("check reports %d projection errors, want exactly %d (nothing repeated, nothing derived from a refused declaration)", n, len(wants))
	}
	if !strings.Contains(out, "ok      projections  1 of 8 projection(s) compile and plan against the source schema") {
		t.Errorf("check does not count g_fine as the one projection that plans")
	}

	code, out, errOut := runVerb(t, "plan", head+decls)
	if code != 1 || out != "" {
		t.Errorf("plan: exit %d with stdout %q; want 1 and no DDL", code, out)
	}
	assertAll("plan's stderr", errOut, "")
	if n := strings.Count(errOut, "\nprojections."); n != len(wants) {
		t.Errorf("plan reports %d problems, want exactly %d:\n%s", n, len(wants), errOut)
	}

	// A mode value the config does not accept and a key it does not
	// know: the config is invalid, and still every projection's problem
	// is listed beside them.
	invalid := strings.Replace(head+decls, "  g_fine:\n", "  g_fine:\n    on_error: skip\n    colour: red\n", 1)
	configWants := []string{`projections.g_fine.on_error "skip": want dlq or stop`,
		"projections.g_fine has unknown keys: colour: correct or remove them (docs/config.md lists every key)"}
	code, out, _ = runVerb(t, "check", invalid)
	t.Logf("readside check of an invalid config:\n%s", out)
	if code != 1 {
		t.Errorf("check of an invalid config: exit %d, want 1", code)
	}
	for _, w := range configWants {
		if !strings.Contains(out, "ERROR   config       "+w+"\n") {
			t.Errorf("check of an invalid config lacks %q", w)
		}
	}
	assertAll("check's output of an invalid config", out, "ERROR   projections  ")
	code, _, errOut = runVerb(t, "plan", invalid)
	if code != 1 {
		t.Errorf("plan of an invalid config: exit %d, want 1", code)
	}
	assertAll("plan's stderr of an invalid config", errOut, "")
	for _, w := range configWants {
		if !strings.Contains(errOut, w+"\n") {
			t.Errorf("plan of an invalid config lacks %q:\n%s", w, errOut)
		}
	}
}
