package sinks

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

var update = flag.Bool("update", false, "rewrite testdata/statements from the statements rendered now")

// goldenProjections are the projections whose statements are held as
// golden text, each for a shape the statements differ by.
func goldenProjections(t *testing.T) map[string]*projections.Projection {
	cfg := config.Default()
	cfg.Source.Tables = []string{"chat.messages", "chat.users", "shop.orders", "shop.customers", "shop.regions", "shop.warehouses"}
	cfg.Sinks = map[string]config.Sink{
		"reads": {DSN: "u:p@tcp(h:1)/reads"},
		"sharded": {Shards: []config.Shard{
			{KeyRange: "-80", DSN: "u:p@tcp(h:1)/reads"},
			{KeyRange: "80-", DSN: "u:p@tcp(h:2)/reads"},
		}},
	}
	cfg.Projections = map[string]config.Projection{
		// plain: one key column, no joins.
		"orders": {From: "shop.orders", Sink: "reads", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "customer": "customer", "total": "total"}},
		// join: a child copying its parent's columns (state + fan-out).
		"messages_with_sender": {From: "chat.messages", Sink: "reads", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "sender_id": "sender_id", "body": "body"},
			Join:    []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}, Columns: map[string]string{"sender_name": "name"}}}},
		// joins through a parent's parent: orders → customers → regions
		// (via c), beside a second level-1 join (a carried key, detach,
		// and the keys read from the via join's state).
		"orders_with_region": {From: "shop.orders", Sink: "reads", Key: []string{"customer_id", "id"},
			Columns: map[string]string{"id": "id", "customer_id": "customer_id", "warehouse_id": "warehouse_id"},
			Join: []config.Join{
				{From: "shop.customers", As: "c", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_name": "name"}},
				{From: "shop.regions", Via: "c", On: map[string]string{"id": "region_id"}, Columns: map[string]string{"region_name": "name"}},
				{From: "shop.warehouses", On: map[string]string{"id": "warehouse_id"}, Columns: map[string]string{"warehouse_city": "city"}},
			}},
		// sharded: a composite key led by the shard key, on a sink of two shards.
		"messages_by_sender": {From: "chat.messages", Sink: "sharded", Key: []string{"created_at", "id", "sender_id"}, ShardBy: "sender_id",
			Columns: map[string]string{"sender_id": "sender_id", "created_at": "created_at", "id": "id", "body": "body"}},
		// aggregate: one group column, every aggregate function, the
		// group's parent joined.
		"customer_stats": {From: "shop.orders", Sink: "reads", GroupBy: []string{"customer_id"}, Where: "status <> 'draft'",
			Join: []config.Join{{From: "shop.customers", On: map[string]string{"id": "customer_id"}, Columns: map[string]string{"customer_name": "name"}}},
			Aggregates: map[string]string{"orders": "count(*)", "priced": "count(total)", "total": "sum(total)", "first_at": "min(created_at)",
				"last_at": "max(created_at)", "paid": "count_if(status = 'paid')", "paid_total": "sum_if(status = 'paid', total)", "avg_total": "avg(total)"}},
		// aggregate: a two-column group (an expression among them) on a
		// sink of two shards, shard_by leading, with a distinct count.
		"daily_stats": {From: "shop.orders", Sink: "sharded", GroupBy: []string{"DATE(created_at)", "customer_id"}, ShardBy: "customer_id",
			Aggregates: map[string]string{"orders": "count(*)", "total": "sum(total)", "statuses": "count(distinct status)"}},
		// aggregate: groups from joined parents, one through a parent's
		// parent (via) and one an expression over a root join's column,
		// beside a source column (regroup and the joined groups' reads).
		"region_revenue": {From: "shop.orders", Sink: "reads", GroupBy: []string{"region", "city_upper", "status"},
			Join: []config.Join{
				{From: "shop.customers", As: "c", On: map[string]string{"id": "customer_id"}},
				{From: "shop.regions", Via: "c", On: map[string]string{"id": "region_id"}, Columns: map[string]string{"region": "name"}},
				{From: "shop.warehouses", On: map[string]string{"id": "warehouse_id"}, Columns: map[string]string{"city_upper": "UPPER(city)"}},
			},
			Aggregates: map[string]string{"orders": "count(*)", "total": "sum(total)"}},
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*projections.Projection{}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

// namedStatement is one statement of a projection, as the golden file
// shows it.
type namedStatement struct{ name, text string }

// statementList is the statements of st that name its tables, multi-row
// ones for two rows (head, row, separator, row, tail).
func statementList(st *statements) []namedStatement {
	if st.agg != nil {
		return aggregateList(st)
	}
	list := []namedStatement{
		{"comment", st.comment},
		{"upsert (version guard)", st.upsert.text(2)},
		{"lenient upsert (ENUM index 0)", st.lenientUpsert.text(2)},
		{"guarded delete", st.deleteRows.text(2)},
		{"truncate rows", st.truncateRows},
	}
	for i, j := range st.joins {
		pre := "join " + st.p.Joins[i].ParentDB + "." + st.p.Joins[i].ParentTbl + ": "
		list = append(list,
			namedStatement{pre + "lock parents", j.lock.text(2)},
			namedStatement{pre + "parent state", j.state.text(2)},
			namedStatement{pre + "truncate state", j.truncateState},
			namedStatement{pre + "truncate read copies", j.truncateRead},
			namedStatement{pre + "fan-out", j.fanOut.text(2)},
			namedStatement{pre + "fill the rows the batch writes", j.fillRows.text(2)},
		)
		if st.p.Joins[i].Via != nil {
			list = append(list,
				namedStatement{pre + "keys carried by the via join's state", j.via.keys.text(2)},
				namedStatement{pre + "detach (before the via join's fan-out)", j.via.detach.text(2)},
			)
		}
	}
	return list
}

// aggregateList is the statements of an aggregate projection (the read
// table's own upserts and deletes are not used).
func aggregateList(st *statements) []namedStatement {
	a := st.agg
	list := []namedStatement{{"comment", st.comment}}
	list = append(list,
		namedStatement{"aggregate: read contributions, locking them", a.read.text(2)},
		namedStatement{"aggregate: read contributions and the truncation floor", a.readFirst.text(2)},
		namedStatement{"aggregate: the truncation floor alone (no contribution read)", a.floor},
		namedStatement{"aggregate: write contributions", a.write.text(2)},
		namedStatement{"aggregate: insert first contributions", a.insert.text(2)},
		namedStatement{"aggregate: group deltas", a.delta.text(2)},
		namedStatement{"aggregate: remove empty groups", a.deleteEmpty.text(2)},
		namedStatement{"aggregate truncation: withdraw older contributions", a.withdraw},
		namedStatement{"aggregate truncation: clear groups", a.clearGroups},
		namedStatement{"aggregate truncation: rebuild groups", a.rebuildGroups},
	)
	for i, re := range a.recomputeExtremes {
		if re.head != "" {
			list = append(list, namedStatement{"aggregate: recompute " + st.p.Aggregation.Aggregates[i].Text, re.text(2)})
		}
	}
	if a.recomputeAvg.head != "" {
		list = append(list, namedStatement{"aggregate: recompute AVG", a.recomputeAvg.text(2)})
	}
	for i, fill := range a.fillJoins {
		list = append(list, namedStatement{fmt.Sprintf("aggregate truncation: fill join %d", i+1), fill})
	}
	for _, d := range a.distinct {
		pre := "count(distinct) " + st.p.Aggregation.Aggregates[d.i].Column + ": "
		list = append(list,
			namedStatement{pre + "add to the reference counts", d.upsert.text(2)},
			namedStatement{pre + "read the touched reference counts", d.read.text(2)},
			namedStatement{pre + "remove values no row holds", d.dropZero.text(2)},
			namedStatement{pre + "truncation: clear", d.clear},
			namedStatement{pre + "truncation: rebuild", d.rebuild},
			namedStatement{pre + "repair: clear groups", d.clearGroups.text(2)},
			namedStatement{pre + "repair: rebuild groups", d.rebuildGroups.text(2) + d.rebuildTail},
		)
	}
	for i, j := range st.joins {
		pre := "join " + st.p.Joins[i].ParentDB + "." + st.p.Joins[i].ParentTbl + ": "
		list = append(list,
			namedStatement{pre + "lock parents", j.lock.text(2)},
			namedStatement{pre + "parent state", j.state.text(2)},
			namedStatement{pre + "fan-out", j.fanOut.text(2)},
		)
	}
	if g := a.joined; g != nil {
		list = append(list,
			namedStatement{"joined groups: the batches' lock", g.lock},
			namedStatement{"joined groups: the batches' shared lock", g.share},
			namedStatement{"regroup: contributions of given keys", g.byKey.text(2)},
			namedStatement{"regroup: every contribution (a parent truncated)", g.all},
			namedStatement{"regroup: move contributions of given keys", g.moveByKey.text(2)},
			namedStatement{"regroup: move every contribution", g.moveAll},
		)
		for i, b := range g.byParent {
			list = append(list, namedStatement{"regroup: contributions below join " + st.p.Joins[i].ParentDB + "." + st.p.Joins[i].ParentTbl, b.text(2)})
			list = append(list, namedStatement{"regroup: move contributions below join " + st.p.Joins[i].ParentDB + "." + st.p.Joins[i].ParentTbl, g.moveByParent[i].text(2)})
		}
		for i, b := range g.byLink {
			if b.head != "" {
				list = append(list, namedStatement{"joined groups of the links to " + st.p.Joins[i].ParentDB + "." + st.p.Joins[i].ParentTbl, b.text(2)})
			}
		}
	}
	return list
}

// bookkeepingList is the statements of st on readside's own tables, the
// same text for every projection.
func bookkeepingList(st *statements) []namedStatement {
	return []namedStatement{
		{"tombstones", st.tombstones.text(2)},
		{"tombstone lookup", st.tombstoneLookup.text(2)},
		{"first tombstone lookup (with the truncation floor)", st.firstLookup.text(2)},
		{"truncation", st.truncation},
		{"truncated at", st.truncatedAt},
		{"offsets", st.offsets.text(2)},
		{"watermarks", st.watermarks.text(2)},
		{"routing generation (live projectors, first in every transaction)", st.routing},
	}
}

func goldenText(list []namedStatement) string {
	var b strings.Builder
	for _, s := range list {
		b.WriteString("-- " + s.name + "\n" + s.text + "\n\n")
	}
	return b.String()
}

// TestStatementsGolden: the exact SQL of every statement a projection
// needs, per dialect, is the text in testdata/statements: <projection>.
// <dialect>.sql for those on its own tables, bookkeeping.<dialect>.sql
// for those on readside's, which every projection shares (go test -run
// TestStatementsGolden ./sinks/ -update rewrites them).
func TestStatementsGolden(t *testing.T) {
	for name, p := range goldenProjections(t) {
		for dname, d := range map[string]dialect{"mariadb": mariaDB, "mysql8": mysql8} {
			st := newStatements(p, d)
			checkGolden(t, filepath.Join("testdata", "statements", name+"."+dname+".sql"), goldenText(statementList(st)))
			checkGolden(t, filepath.Join("testdata", "statements", "bookkeeping."+dname+".sql"), goldenText(bookkeepingList(st)))
		}
	}
}

// checkGolden compares got with the file at path (-update: writes it).
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestStatementsGolden ./sinks/ -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: the statements differ from the golden text (-update rewrites it)%s", path, testbed.FirstDifference(got, string(want)))
	}
}

// TestStatementsRenderedOnce: a sink renders a projection's statements
// once, in its own dialect, and again for a projection reloaded under the
// same name (its columns may differ).
func TestStatementsRenderedOnce(t *testing.T) {
	ps := goldenProjections(t)
	s := &MySQL{dialect: mysql8}
	p := ps["orders"]
	reloaded := *p
	reloaded.Table = "orders_v2"
	// Known character sets (none to convert): no sink to read them from.
	keyCharsets.Store(p, map[string]string{})
	keyCharsets.Store(&reloaded, map[string]string{})
	statementsFor := func(p *projections.Projection) *statements {
		st, err := s.statementsFor(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := statementsFor(p)
	if again := statementsFor(p); again != first {
		t.Error("the statements of one projection were rendered twice")
	}
	if !strings.Contains(first.upsert.tail, " AS _rs_new ") {
		t.Errorf("a MySQL 8 sink got %q", first.upsert.tail)
	}
	if st := statementsFor(&reloaded); st == first || !strings.Contains(st.upsert.head, "`orders_v2`") {
		t.Errorf("a reloaded projection of the same name kept the old statements: %s", st.upsert.head)
	}
}
