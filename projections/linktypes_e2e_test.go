package projections_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

// TestJoinLinkTypesRefused: a join whose link column would not match its
// parent key as the source's JOIN matches them is refused against the
// real schema, naming the link, both types and the fix — a DECIMAL or a
// VARCHAR link to an INT key and a utf8mb4_bin link to a
// utf8mb4_general_ci key in an aggregate's joined groups, a VARCHAR link
// to an INT key in a copy and in a children entry's on, and the _bin
// link in a children join — while links the sink matches exactly are
// taken: a DECIMAL and a BIGINT link to an INT key in a copy and in a
// children entry's on, a narrower integer in an aggregate, a latin1 link
// to a utf8mb4 key, the _bin link in a children entry's on (compared in
// the sink, each side in its own collation).
func TestJoinLinkTypesRefused(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "lnk")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE `"+src+"`.p (id INT PRIMARY KEY, grp VARCHAR(5) NULL)",
		"CREATE TABLE `"+src+"`.q (code VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY, grp INT NULL)",
		"CREATE TABLE `"+src+"`.c (id INT PRIMARY KEY, pid INT NULL, pid_small SMALLINT NULL, pid_dec DECIMAL(6,2) NULL, pid_str VARCHAR(10) NULL,"+
			" pid_big BIGINT NULL, qcode VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, lcode VARCHAR(5) CHARACTER SET latin1 NULL, v INT NOT NULL)",
	); err != nil {
		t.Fatal(err)
	}
	agg := func(link, parent, key string) string {
		return fmt.Sprintf("    from: %[1]s.c\n    sink: reads\n    join: [{from: %[1]s.%[3]s, on: {%[4]s: %[2]s}, columns: {g: grp}}]\n    group_by: [g]\n    aggregates: {n: \"count(*)\"}\n", src, link, parent, key)
	}
	copyOf := func(link, parent, key string) string {
		return fmt.Sprintf("    from: %[1]s.c\n    sink: reads\n    key: [id]\n    columns: {id: id, %[2]s: %[2]s}\n    join: [{from: %[1]s.%[3]s, on: {%[4]s: %[2]s}, columns: {g: grp}}]\n", src, link, parent, key)
	}
	children := fmt.Sprintf("    from: %[1]s.p\n    sink: reads\n    key: [id]\n    columns: {id: id}\n    children:\n      items:\n        from: %[1]s.c\n        on: {pid: id}\n        columns: {v: v}\n        join: [{from: %[1]s.q, on: {code: qcode}, columns: {g: grp}}]\n", src)
	childrenOn := func(parent, key, link string) string {
		return fmt.Sprintf("    from: %[1]s.%[2]s\n    sink: reads\n    key: [%[3]s]\n    columns: {%[3]s: %[3]s}\n    children:\n      items:\n        from: %[1]s.c\n        on: {%[4]s: %[3]s}\n        columns: {v: v}\n", src, parent, key, link)
	}
	for _, c := range []struct {
		name, decl string
		refused    string // "" when accepted
	}{
		{"agg_dec", agg("pid_dec", "p", "id"), "the link " + src + ".c.pid_dec is decimal(6,2) but the parent key " + src + ".p.id is int(11)"},
		{"agg_str", agg("pid_str", "p", "id"), "the link " + src + ".c.pid_str is varchar(10)"},
		{"agg_bin", agg("qcode", "q", "code"), "different collations (utf8mb4_bin, utf8mb4_general_ci)"},
		{"agg_small", agg("pid_small", "p", "id"), ""},
		{"agg_latin1", agg("lcode", "q", "code"), ""},
		{"copy_str", copyOf("pid_str", "p", "id"), "the server compares varchar with int"},
		{"copy_dec", copyOf("pid_dec", "p", "id"), ""},
		{"copy_big", copyOf("pid_big", "p", "id"), ""},
		{"children_bin", children, "children.items.join[0].on.code: the link " + src + ".c.qcode"},
		{"children_on_str", childrenOn("p", "id", "pid_str"), "children.items.on.pid_str: the link " + src + ".c.pid_str"},
		{"children_on_dec", childrenOn("p", "id", "pid_dec"), ""},
		{"children_on_bin", childrenOn("q", "code", "qcode"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			yaml := fmt.Sprintf("source: {dsn: \"u:p@tcp(127.0.0.1:3306)/\", server_id: 7, tables: [%[1]s.p, %[1]s.q, %[1]s.c]}\nsinks:\n  reads: {dsn: \"u:p@tcp(127.0.0.1:3306)/r\"}\nprojections:\n  %[2]s:\n%[3]s", src, c.name, c.decl)
			path := filepath.Join(t.TempDir(), "readside.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := projections.Compile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ps[0].SourceColumns(ctx, bed.MySQL.DB())
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused a link the sink matches as the source does: %v", err)
			case c.refused != "" && err == nil:
				t.Fatalf("accepted a link that does not match as the source's JOIN does (want %q)", c.refused)
			case c.refused != "" && (!strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "; fix: give ")):
				t.Fatalf("the refusal does not name the link and the fix: %v (want %q)", err, c.refused)
			}
		})
	}
}
