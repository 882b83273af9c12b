package projections

import (
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// blogConfig captures a blog's posts, authors and comments, with no
// projection yet.
func blogConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"blog.posts", "blog.authors", "blog.comments"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{}
	return cfg
}

// TestCompileEachProblems: every projection is compiled on its own, so the
// problems of several projections come in one run, each under its own
// projection (none hides another's, none is charged to another), in name
// order, and Compile lists them all.
func TestCompileEachProblems(t *testing.T) {
	posts := func(mut func(*config.Projection)) config.Projection {
		d := config.Projection{From: "blog.posts", Sink: "reads", Key: []string{"id"}, Columns: map[string]string{"id": "id", "title": "title"}}
		mut(&d)
		return d
	}
	stats := func(aggs map[string]string) config.Projection {
		return config.Projection{From: "blog.posts", Sink: "reads", GroupBy: []string{"author_id"}, Aggregates: aggs}
	}
	authors := config.Join{From: "blog.authors", On: map[string]string{"id": "author_id"}, Columns: map[string]string{"author_name": "name"}}
	cases := []struct {
		why   string
		decls map[string]config.Projection
		// want: per projection, the problems it must report (each a
		// substring of one message), nothing for one that compiles.
		want map[string][]string
	}{
		{
			why: "an unknown aggregate, a misspelt source column and a malformed child order_by in three projections: all three reported",
			decls: map[string]config.Projection{
				"a_stats": stats(map[string]string{"n": "median(id)"}),
				"b_typo": posts(func(d *config.Projection) {
					d.Columns["author_id"] = "authr_id"
					d.Join = []config.Join{authors}
				}),
				"c_comments": posts(func(d *config.Projection) {
					d.Children = map[string]config.Children{"comments": {From: "blog.comments", On: map[string]string{"post_id": "id"}, Columns: map[string]string{"body": "body"}, OrderBy: []string{"created_at desc"}}}
				}),
				"d_fine": posts(func(*config.Projection) {}),
			},
			want: map[string][]string{
				"a_stats":    {`projections.a_stats.aggregates.n "median(id)": unknown aggregate function "median": the supported aggregates are count(*), count(expr), count(distinct expr), sum(expr), sum(distinct expr), min(expr), max(expr), avg(expr), count_if(cond) and sum_if(cond, expr)`},
				"b_typo":     {`projections.b_typo.join[0].on.id: source column "author_id" is not mapped in projections.b_typo.columns: add it (fan-out finds the read rows by it); projections.b_typo.columns.author_id copies source column "authr_id", not author_id: if "authr_id" is misspelt, map author_id: author_id`},
				"c_comments": {`projections.c_comments.children.comments.order_by[0] "created_at desc": order_by lists child columns by name (ascending)`},
			},
		},
		{
			why: "a DISTINCT form not offered (avg) says so and what is, instead of a parse error; count(distinct) compiles; the sibling's bad sink is still its own",
			decls: map[string]config.Projection{
				"readers": stats(map[string]string{"readers": "count(distinct id)", "avg_readers": "avg(distinct id)", "posts": "count(*)"}),
				"sunk":    posts(func(d *config.Projection) { d.Sink = "nope" }),
			},
			want: map[string][]string{
				"readers": {`projections.readers.aggregates.avg_readers "avg(distinct id)": avg(DISTINCT …) is not supported: of the DISTINCT forms only count(distinct expr) and sum(distinct expr) are; the supported aggregates are count(*), count(expr), count(distinct expr), sum(expr), sum(distinct expr), min(expr), max(expr), avg(expr), count_if(cond) and sum_if(cond, expr)`},
				"sunk":    {`projections.sunk.sink "nope" is not a configured sink`},
			},
		},
		{
			why: "a join column named like an aggregate's group column clashes with group_by, not with a columns key that does not exist",
			decls: map[string]config.Projection{
				"by_author": func() config.Projection {
					d := stats(map[string]string{"posts": "count(*)"})
					d.Join = []config.Join{{From: "blog.authors", On: map[string]string{"id": "author_id"}, Columns: map[string]string{"author_id": "id", "author_name": "name"}}}
					return d
				}(),
			},
			want: map[string][]string{
				"by_author": {`projections.by_author.join[0].columns.author_id: author_id is already a column of projections.by_author.group_by (a group column): rename one of them`},
			},
		},
		{
			why: "an aggregate's misspelt group column mapping is named by the join on it",
			decls: map[string]config.Projection{
				"by_author": {From: "blog.posts", Sink: "reads", GroupBy: []string{"author_id"}, Columns: map[string]string{"author_id": "authr_id"},
					Aggregates: map[string]string{"posts": "count(*)"}, Join: []config.Join{authors}},
			},
			want: map[string][]string{
				"by_author": {`projections.by_author.join[0].on.id: "author_id" is not a group_by column copying a source column: an aggregate projection's join finds a group's parent by its group columns (add author_id to group_by, or join on a group column); projections.by_author.columns.author_id copies source column "authr_id", not author_id: if "authr_id" is misspelt, map author_id: author_id`},
			},
		},
		{
			why: "a key column missing from columns is that problem only: a join column of the same name is no clash with columns",
			decls: map[string]config.Projection{
				"keyed": posts(func(d *config.Projection) {
					d.Key = []string{"id", "author_name"}
					d.Columns["author_id"] = "author_id"
					d.Join = []config.Join{authors}
				}),
			},
			want: map[string][]string{
				"keyed": {`projections.keyed.key column "author_name" is not in projections.keyed.columns: add it there`},
			},
		},
		{
			why: "a malformed from leaves the projection out of what runs, yet its other problems and the next projection's are listed",
			decls: map[string]config.Projection{
				"a_from": posts(func(d *config.Projection) { d.From = "posts"; d.OnError = "skip" }),
				"b_key":  posts(func(d *config.Projection) { d.Key = nil }),
			},
			want: map[string][]string{
				"a_from": {`projections.a_from.from "posts": want db.table`, `projections.a_from.on_error "skip"`},
				"b_key":  {"projections.b_key.key is empty"},
			},
		},
	}
	for _, c := range cases {
		cfg := blogConfig()
		cfg.Projections = c.decls
		ds := CompileEach(cfg)
		var names []string
		for _, d := range ds {
			names = append(names, d.Name)
		}
		if !slices.IsSorted(names) || len(names) != len(c.decls) {
			t.Errorf("%s: compiled %v, want every projection once, in name order", c.why, names)
		}
		for _, d := range ds {
			got := ""
			if d.Err != nil {
				got = d.Err.Error()
			}
			for _, w := range c.want[d.Name] {
				if !strings.Contains(got, w) {
					t.Errorf("%s: projection %s: problems\n%s\nlack %q", c.why, d.Name, got, w)
				}
			}
			if n := len(c.want[d.Name]); n == 0 && got != "" || n > 0 && strings.Count(got, "\n")+1 != n {
				t.Errorf("%s: projection %s: %d problem(s) wanted, got\n%s", c.why, d.Name, n, got)
			}
			if d.P == nil && d.Name != "a_from" {
				t.Errorf("%s: projection %s left out of what runs", c.why, d.Name)
			}
		}
		_, err := Compile(cfg)
		all := 0
		for _, w := range c.want {
			all += len(w)
			for _, m := range w {
				if err == nil || !strings.Contains(err.Error(), m) {
					t.Errorf("%s: Compile's error lacks %q: %v", c.why, m, err)
				}
			}
		}
		if err == nil || strings.Count(err.Error(), "\n")+1 != all {
			t.Errorf("%s: Compile reports %v, want %d problems", c.why, err, all)
		}
	}
}

// TestCheckChildrenSkipsBroken: a children entry whose from or on did not
// compile is not checked for what depends on them (Compile named the
// problem), while its other columns still are: a missing order_by column
// of the same entry is reported in the same run.
func TestCheckChildrenSkipsBroken(t *testing.T) {
	parent := &sourceTable{types: map[string]string{"id": "int", "title": "varchar(50)"}, pk: []string{"id"}, columns: []string{"id", "title"}}
	child := &sourceTable{types: map[string]string{"id": "int", "post_id": "int", "body": "text"}, pk: []string{"id"}, columns: []string{"id", "post_id", "body"}}
	read := func(db, tbl string) (*sourceTable, error) {
		if db == "blog" && tbl == "comments" {
			return child, nil
		}
		return nil, nil // no such table
	}
	cases := []struct {
		why      string
		children config.Children
		noParent bool     // the projection's own table does not exist
		want     []string // each a substring of one problem, all of them
	}{
		{"on names an uncopied parent column: only the missing order_by column, no 'on names [] but the primary key is [id]'",
			config.Children{From: "blog.comments", On: map[string]string{"post_id": "post_ref"}, Columns: map[string]string{"body": "body"}, OrderBy: []string{"posted_at"}},
			false, []string{`projections.p.children.comments.order_by[0]: column "posted_at" does not exist in blog.comments (its columns: id, post_id, body)`}},
		{"from malformed: no 'does not exist on the source' for a table named by nothing",
			config.Children{From: "comments", On: map[string]string{"post_id": "id"}, Columns: map[string]string{"body": "body"}},
			false, nil},
		{"on fine: the primary-key coverage is still checked (a broken entry elsewhere does not switch it off)",
			config.Children{From: "blog.comments", On: map[string]string{"post_id": "title"}, Columns: map[string]string{"body": "body"}},
			false, []string{`projections.p.children.comments.on names parent column(s) [title], but blog.posts's primary key is [id]`}},
		{"no parent table (SourceColumns names it): the child table is still checked",
			config.Children{From: "blog.comments", On: map[string]string{"post_id": "id"}, Columns: map[string]string{"body": "body"}, OrderBy: []string{"posted_at"}}, true,
			[]string{`projections.p.children.comments.order_by[0]: column "posted_at" does not exist in blog.comments`}},
	}
	for _, c := range cases {
		cfg := blogConfig()
		cfg.Projections["p"] = config.Projection{From: "blog.posts", Sink: "reads", Key: []string{"id"}, Columns: map[string]string{"id": "id", "title": "title"},
			Children: map[string]config.Children{"comments": c.children}}
		ds := CompileEach(cfg)
		src := parent
		if c.noParent {
			src = nil
		}
		_, errs, err := ds[0].P.checkChildren(read, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) != len(c.want) {
			t.Errorf("%s: %d problems %v, want %d", c.why, len(errs), errs, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s: problem %q lacks %q", c.why, errs[i], w)
			}
		}
	}
}
