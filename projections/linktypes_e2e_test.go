package projections_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestJoinLinkTypesRefused: a join whose link column would not match its
// parent key as the source's JOIN matches them is refused against the
// real schema, naming the link, both types and the fix — a DECIMAL or a
// VARCHAR link to an INT key and a utf8mb4_bin link to a
// utf8mb4_general_ci key in an aggregate's joined groups, a VARCHAR link
// to an INT key in a copy and in a children entry's on, and the _bin
// link in a children join — while links the sink matches exactly are
// taken: a DECIMAL and a BIGINT link to an INT key in a copy and in a
// children entry's on, a narrower or a wider integer in an aggregate
// (TestAggregateWiderIntegerLinks runs one), a latin1 link
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
		{"agg_big", agg("pid_big", "p", "id"), ""},
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

// TestAggregateWiderIntegerLinks: an aggregate grouped by a joined
// parent's column through an integer link whose values the parent key's
// type cannot all hold — a BIGINT link to an INT key, a signed INT link
// to an INT UNSIGNED key — keeps the links in a type that holds both: a
// link beyond the key's range (3,000,000,000; -7) finds no parent and its
// row is in no group, as in the source's JOIN, while parents move group,
// leave and come back, across a projector restart. Both read tables equal
// the source's GROUP BY over the inner joins.
func TestAggregateWiderIntegerLinks(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "widelnk")
	if err != nil {
		t.Fatal(err)
	}
	tbl := func(n string) string { return "`" + src + "`." + n }
	if err := bed.MySQL.Exec(ctx,
		"CREATE TABLE "+tbl("acct")+" (id INT PRIMARY KEY, region INT NULL)",
		"CREATE TABLE "+tbl("shop")+" (id INT UNSIGNED PRIMARY KEY, kind INT NULL)",
		"CREATE TABLE "+tbl("sale")+" (id INT PRIMARY KEY, acct_id BIGINT NULL, shop_id INT NULL, amt INT NOT NULL)",
		"INSERT INTO "+tbl("acct")+" VALUES (1, 10), (2, 20), (3, 10), (4, NULL)",
		"INSERT INTO "+tbl("shop")+" VALUES (1, 100), (2, 200), (3, 100)",
	); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("widelnk", src+".sale", src+".acct", src+".shop")
	cfg.Projections = map[string]config.Projection{
		"by_region": {From: src + ".sale", Sink: "reads",
			Join:    []config.Join{{From: src + ".acct", On: map[string]string{"id": "acct_id"}, Columns: map[string]string{"region": "region"}}},
			GroupBy: []string{"region"}, Aggregates: map[string]string{"n": "count(*)", "total": "sum(amt)"}},
		"by_kind": {From: src + ".sale", Sink: "reads",
			Join:    []config.Join{{From: src + ".shop", On: map[string]string{"id": "shop_id"}, Columns: map[string]string{"kind": "kind"}}},
			GroupBy: []string{"kind"}, Aggregates: map[string]string{"n": "count(*)", "total": "sum(amt)"}},
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "widelnkreads")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(ctx, "reads", cfg.Sinks["reads"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	for _, p := range ps {
		types, err := p.SourceColumns(ctx, bed.MySQL.DB())
		if err != nil {
			t.Fatalf("a wider integer link refused: %v", err)
		}
		if err := sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
			t.Fatal(err)
		}
		noDrift(t, sink, p, types) // the plan keeps the links as DDL made them
	}
	runTailer(t, bed, cfg)
	start := func() func() { return startProjectors(t, ps, sink, cfg.Kafka.Brokers) }
	db := bed.MySQL.DB()
	expected := func() string {
		return testbed.RowsText(t, db, "SELECT a.region, COUNT(*), SUM(s.amt) FROM "+tbl("sale")+" s JOIN "+tbl("acct")+" a ON a.id = s.acct_id WHERE a.region IS NOT NULL GROUP BY 1 ORDER BY 1") + "--\n" +
			testbed.RowsText(t, db, "SELECT h.kind, COUNT(*), SUM(s.amt) FROM "+tbl("sale")+" s JOIN "+tbl("shop")+" h ON h.id = s.shop_id WHERE h.kind IS NOT NULL GROUP BY 1 ORDER BY 1")
	}
	actual := func() string {
		return testbed.RowsText(t, db, "SELECT region, n, total FROM `"+sinkDB+"`.by_region ORDER BY 1") + "--\n" +
			testbed.RowsText(t, db, "SELECT kind, n, total FROM `"+sinkDB+"`.by_kind ORDER BY 1")
	}
	waitEqual := func(what string) {
		testbed.Eventually(t, 90*time.Second, func() (bool, string) {
			w, g := expected(), actual()
			return w == g, fmt.Sprintf("%s: read tables differ from the source's GROUP BY over the joins: %s", what, testbed.FirstDifference(g, w))
		})
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 7))
	acctLinks := []any{1, 2, 3, 4, 5, int64(3_000_000_000), int64(-3_000_000_000), nil}
	shopLinks := []any{1, 2, 3, 4, -7, nil}
	write := func(ops int) {
		for range ops {
			var q string
			var args []any
			switch k := rng.IntN(10); {
			case k < 6:
				q, args = "INSERT INTO "+tbl("sale")+" VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE acct_id = VALUES(acct_id), shop_id = VALUES(shop_id), amt = VALUES(amt)",
					[]any{1 + rng.IntN(60), acctLinks[rng.IntN(len(acctLinks))], shopLinks[rng.IntN(len(shopLinks))], rng.IntN(100)}
			case k < 7:
				q, args = "DELETE FROM "+tbl("sale")+" WHERE id = ?", []any{1 + rng.IntN(60)}
			case k < 8:
				q, args = "INSERT INTO "+tbl("acct")+" VALUES (?, ?) ON DUPLICATE KEY UPDATE region = VALUES(region)", []any{1 + rng.IntN(5), 10 * rng.IntN(4)}
			case k < 9:
				q, args = "INSERT INTO "+tbl("shop")+" VALUES (?, ?) ON DUPLICATE KEY UPDATE kind = VALUES(kind)", []any{1 + rng.IntN(4), 100 * rng.IntN(3)}
			default:
				q, args = "DELETE FROM "+tbl([]string{"acct", "shop"}[rng.IntN(2)])+" WHERE id = ?", []any{1 + rng.IntN(5)}
			}
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	stop := start()
	write(300)
	waitEqual("after the first load")
	stop()
	write(200)
	stop = start()
	defer stop()
	waitEqual("after more load and a restart")
	var far int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl("sale")+" WHERE acct_id > 2147483647 OR acct_id < -2147483648 OR shop_id < 0").Scan(&far); err != nil {
		t.Fatal(err)
	}
	if far == 0 {
		t.Fatal("the workload left no link beyond its key's range: the test shows nothing")
	}
	t.Logf("equal to the source's GROUP BY, %d sales linked beyond their key's range", far)
}
