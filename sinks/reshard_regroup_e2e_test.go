package sinks_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestRebuildAggregateRegroupsCopiedContributions: a reshard copies an
// aggregate's contributions and its join state at different moments, so
// a NEW shard can hold contributions grouped by a parent's old value and
// the state with its new one. Here payments grouped by till and a joined
// store are applied to an OLD shard, twelve of them linked to parent 5
// whose store is 10; the contributions are copied onto two NEW shards as
// the reshard copies them; parent 5's store then becomes 20 on the OLD
// shard, and only after that is the join state copied. The store comes
// from the staff member (one join), from the film of the inventory item
// (a join via another) with the film changing store, or with the item
// changing film. RebuildAggregate, over every group and over the range
// 80-c0 alone (tills 2, 3, 4), must count every payment of parent 5 under
// store 20 and none under store 10 (it fails without the regroup of every
// contribution, moveAll), keep only its range's tills (it fails without
// dropForeignGroups), give the rows (hidden columns included) and
// reference counts the OLD shard kept incrementally, and give them again
// when run twice.
func TestRebuildAggregateRegroupsCopiedContributions(t *testing.T) {
	bed := testbed.Get(t)
	pw := func(join, id, value int, v uint64) projections.ParentWrite {
		return projections.ParentWrite{Join: join, Key: fmt.Sprint(id), KeyValues: projections.ValuesOf(id), Values: projections.ValuesOf(value), Version: v}
	}
	inv, film := "inv (inv_id INT PRIMARY KEY, film INT NULL)", "film (film_id INT PRIMARY KEY, store INT NULL)"
	viaFilm := func(src string) []config.Join {
		return []config.Join{{From: src + ".inv", As: "i", On: map[string]string{"inv_id": "link"}},
			{From: src + ".film", Via: "i", On: map[string]string{"film_id": "film"}, Columns: map[string]string{"store": "store"}}}
	}
	for _, fx := range []struct {
		name   string
		tables []string // the parent tables: name (columns)
		joins  func(src string) []config.Join
		before []projections.ParentWrite // parent 5 at store 10, parent 6 at 30
		move   []projections.ParentWrite // parent 5 to store 20
	}{
		{name: "one join", tables: []string{"staff (staff_id INT PRIMARY KEY, store INT NULL)"},
			joins: func(src string) []config.Join {
				return []config.Join{{From: src + ".staff", On: map[string]string{"staff_id": "link"}, Columns: map[string]string{"store": "store"}}}
			},
			before: []projections.ParentWrite{pw(0, 5, 10, 1), pw(0, 6, 30, 2)},
			move:   []projections.ParentWrite{pw(0, 5, 20, 100)}},
		// Item 5 shows film 7, item 6 film 8; film 9 is at store 20.
		{name: "via, the film moves", tables: []string{inv, film}, joins: viaFilm,
			before: []projections.ParentWrite{pw(0, 5, 7, 1), pw(0, 6, 8, 2), pw(1, 7, 10, 3), pw(1, 8, 30, 4), pw(1, 9, 20, 5)},
			move:   []projections.ParentWrite{pw(1, 7, 20, 100)}},
		{name: "via, the item changes film", tables: []string{inv, film}, joins: viaFilm,
			before: []projections.ParentWrite{pw(0, 5, 7, 1), pw(0, 6, 8, 2), pw(1, 7, 10, 3), pw(1, 8, 30, 4), pw(1, 9, 20, 5)},
			move:   []projections.ParentWrite{pw(0, 5, 9, 100)}},
	} {
		t.Run(fx.name, func(t *testing.T) {
			regroupCopied(t, bed, fx.tables, fx.joins, fx.before, fx.move)
		})
	}
}

// regroupCopied is TestRebuildAggregateRegroupsCopiedContributions for
// one way of joining the store.
func regroupCopied(t *testing.T, bed *testbed.Bed, tables []string, joins func(src string) []config.Join, before, move []projections.ParentWrite) {
	ctx := t.Context()
	src, oldDB := sourceAndSink(t, bed, "rgrp", "id INT PRIMARY KEY, till INT NOT NULL, link INT NULL, amount DECIMAL(8,2) NOT NULL")
	for _, ddl := range tables {
		if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`."+ddl); err != nil {
			t.Fatal(err)
		}
	}
	open := func(db string) (*projections.Projection, *sinks.MySQL) {
		cfg := config.Default()
		cfg.Source.Tables = []string{src + ".t"}
		for _, ddl := range tables {
			cfg.Source.Tables = append(cfg.Source.Tables, src+"."+strings.Fields(ddl)[0])
		}
		cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + db)}}
		cfg.Projections = map[string]config.Projection{"tills": {From: src + ".t", Sink: "s", Join: joins(src),
			GroupBy: []string{"till", "store"}, ShardBy: "till",
			Aggregates: map[string]string{"n": "count(*)", "total": "sum(amount)", "amounts": "count(distinct amount)"}}}
		p, sink := openProjection(t, bed, cfg)
		return p, sink.Shards[0].MySQL
	}
	p, old := open(oldDB)
	newDBs := make([]string, 2)
	news := make([]*sinks.MySQL, 2)
	for i := range news {
		db, err := bed.MySQL.CreateDatabase(ctx, fmt.Sprintf("rgrpnew%d", i))
		if err != nil {
			t.Fatal(err)
		}
		newDBs[i] = db
		_, news[i] = open(db)
	}
	low, err := keyspace.ParseRange("80-c0")
	if err != nil {
		t.Fatal(err)
	}
	const tills = 6
	inLow, n := map[int]bool{}, 0
	for till := 1; till <= tills; till++ {
		// The till's text: what projections.ShardValue hashes for an INT.
		if inLow[till] = low.Contains(keyspace.ID([]byte(strconv.Itoa(till)))); inLow[till] {
			n++
		}
	}
	if n == 0 || n == tills {
		t.Fatalf("tills in 80-c0: %v: the range case needs some in and some out", inLow)
	}

	// Payments 1–12 linked to parent 5 (store 10, later 20), 13–16 to
	// parent 6 (store 30 throughout), over every till; amounts repeat so
	// the distinct counts differ from the row counts.
	type payment struct{ id, till, link, cents int }
	var pays []payment
	first := &projections.Batch{Parents: before}
	for id := 1; id <= 16; id++ {
		py := payment{id: id, till: 1 + id%tills, link: 5, cents: 100 * (1 + id%4)}
		if id > 12 {
			py.link = 6
		}
		pays = append(pays, py)
		first.Contributions = append(first.Contributions, paymentContribution(t, p, py.id, py.till, py.link, py.cents, uint64(10+id)))
	}
	if err := old.Apply(ctx, p, first); err != nil {
		t.Fatal(err)
	}
	// The copy of the contributions (ContributionsCopy, as the reshard
	// reads and writes it), before parent 5 moves.
	copyToNew := func(sc sinks.StateCopy) {
		t.Helper()
		var after []any
		for {
			c, err := old.ScanChunk(ctx, sc.Scan, after, 5)
			if err != nil {
				t.Fatal(err)
			}
			if c.Len() == 0 {
				return
			}
			after = c.Last()
			for _, n := range news {
				if err := n.UpsertChunk(ctx, sc.Scan.Table, sc.Scan.Key, []sinks.Guard{{Version: sc.Version}}, c); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	copyToNew(sinks.ContributionsCopy(p))
	if err := old.Apply(ctx, p, &projections.Batch{Parents: move}); err != nil {
		t.Fatal(err)
	}
	// Every join's state, copied after the move (as the reshard's
	// copyState does, keyed by the parent's columns and guarded by
	// _rs_version).
	for _, j := range p.Joins {
		var key []string
		for _, on := range j.On {
			key = append(key, "k_"+on.Parent)
		}
		copyToNew(sinks.StateCopy{Scan: sinks.TableScan{Table: j.StateTable(p), Key: key}, Version: "_rs_version"})
	}
	ct := "`" + p.ContributionsTable() + "`"
	for i, db := range newDBs {
		// What the copies left: parent 5's contributions still at store 10.
		var n int
		if err := news[i].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+db+"`."+ct+" WHERE g_store = 10").Scan(&n); err != nil || n != 12 {
			t.Fatalf("%s: %d contributions copied at store 10 (%v), want 12: the copies are not the ones this test means", db, n, err)
		}
	}

	// The groups the newest state gives, hand-computed: till, store, n,
	// total, distinct amounts.
	want := func(keep func(till int) bool) string {
		type agg struct {
			n, cents int
			amounts  map[int]bool
		}
		groups := map[[2]int]*agg{}
		for _, py := range pays {
			store := 20
			if py.link == 6 {
				store = 30
			}
			if !keep(py.till) {
				continue
			}
			g := groups[[2]int{py.till, store}]
			if g == nil {
				g = &agg{amounts: map[int]bool{}}
				groups[[2]int{py.till, store}] = g
			}
			g.n++
			g.cents += py.cents
			g.amounts[py.cents] = true
		}
		var out strings.Builder
		for till := 1; till <= tills; till++ {
			for _, store := range []int{10, 20, 30} {
				if g := groups[[2]int{till, store}]; g != nil {
					fmt.Fprintf(&out, "%d|%d|%d|%d.%02d|%d|\n", till, store, g.n, g.cents/100, g.cents%100, len(g.amounts))
				}
			}
		}
		return out.String()
	}
	all := func(int) bool { return true }
	const visible = "SELECT till, store, n, total, amounts FROM tills ORDER BY till, store"
	if got := testbed.RowsText(t, old.DB(), visible); got != want(all) {
		t.Fatalf("the OLD shard after parent 5 moved: %s", testbed.FirstDifference(got, want(all)))
	}
	// Every column but the versions (a rebuilt group row has its members'
	// newest, an incremental one also that of the move) and a reference
	// count's last transaction (_rs_pending, _rs_batch).
	columns := func(table string) []string {
		t.Helper()
		var cols []string
		rows, err := old.DB().QueryContext(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? AND column_name NOT IN ('_rs_version', '_rs_pending', '_rs_batch') ORDER BY ordinal_position", oldDB, table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, "`"+c+"`")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return cols
	}
	groupCols, distinctCols := columns("tills"), columns(p.DistinctTable("amounts"))
	t.Logf("compared: tills %v, %s %v", groupCols, p.DistinctTable("amounts"), distinctCols)
	// The statements reading the group rows and the reference counts of
	// the tills keep accepts, their first column being the till.
	compared := func(keep func(till int) bool) (groups, distinct string) {
		var in []string
		for till := 1; till <= tills; till++ {
			if keep(till) {
				in = append(in, strconv.Itoa(till))
			}
		}
		read := func(table string, cols []string, order string) string {
			return "SELECT " + strings.Join(cols, ", ") + " FROM `" + table + "` WHERE " + cols[0] + " IN (" + strings.Join(in, ", ") + ") ORDER BY " + order
		}
		return read("tills", groupCols, "1, 2"), read(p.DistinctTable("amounts"), distinctCols, "1, 2, 3")
	}

	for _, tc := range []struct {
		name  string
		shard *keyspace.Range
		keep  func(till int) bool
	}{
		{"every group", nil, all},
		{"range 80-c0", &low, func(till int) bool { return inLow[till] }},
	} {
		sh := news[0]
		if tc.shard != nil {
			sh = news[1]
		}
		groups, distinct := compared(tc.keep)
		wantGroups, wantDistinct := testbed.RowsText(t, old.DB(), groups), testbed.RowsText(t, old.DB(), distinct)
		everything, _ := compared(all)
		for run := 1; run <= 2; run++ {
			if err := sh.RebuildAggregate(ctx, p, tc.shard); err != nil {
				t.Fatalf("%s, run %d: %v", tc.name, run, err)
			}
			if got := testbed.RowsText(t, sh.DB(), visible); got != want(tc.keep) {
				t.Fatalf("%s, run %d: the rebuilt groups: %s", tc.name, run, testbed.FirstDifference(got, want(tc.keep)))
			}
			// Every till read on the NEW shard, the range's on the OLD
			// one: hidden columns alike, and no group of another range.
			if got, w := testbed.RowsText(t, sh.DB(), everything), wantGroups; got != w {
				t.Fatalf("%s, run %d: the rebuilt rows, hidden columns too, against the OLD shard's: %s", tc.name, run, testbed.FirstDifference(got, w))
			}
			if got := testbed.RowsText(t, sh.DB(), distinct); got != wantDistinct {
				t.Fatalf("%s, run %d: the rebuilt distinct values against the OLD shard's: %s", tc.name, run, testbed.FirstDifference(got, wantDistinct))
			}
			var n int
			if err := sh.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+p.DistinctTable("amounts")+"`").Scan(&n); err != nil || n != strings.Count(wantDistinct, "\n") {
				t.Fatalf("%s, run %d: %d reference counts (%v), want only the %d of the range's groups", tc.name, run, n, err, strings.Count(wantDistinct, "\n"))
			}
		}
	}
}

// paymentContribution is payment id's contribution to p (till, its
// store, count(*), sum and count(distinct) of amount) as the projector
// makes it: the joined store NULL, for the sink to take from the join
// state, and parent link as the first join's (the joins via another carry
// none: the sink follows the first's state).
func paymentContribution(t *testing.T, p *projections.Projection, id, till, link, cents int, v uint64) projections.Contribution {
	t.Helper()
	amount := fmt.Sprintf("%d.%02d", cents/100, cents%100)
	c := projections.Contribution{SourceKey: fmt.Sprintf(`{"id":%d}`, id), Version: v,
		KeyspaceID: keyspace.ID([]byte(strconv.Itoa(till))),
		Parents:    make([]projections.ParentRef, len(p.Joins))}
	c.Parents[0] = projections.ParentRef{Key: fmt.Sprint(link), Values: projections.ValuesOf(link)}
	for _, k := range p.Key {
		switch k {
		case "till":
			c.Group = append(c.Group, projections.ValueOf(till))
		case "store":
			c.Group = append(c.Group, projections.Value{})
		default:
			t.Fatalf("group column %s", k)
		}
	}
	for _, a := range p.Aggregation.Aggregates {
		switch a.Column {
		case "n":
			c.Values = append(c.Values, projections.ValueOf(1))
		case "total", "amounts":
			c.Values = append(c.Values, projections.ValueOf(amount))
		default:
			t.Fatalf("aggregate %s", a.Column)
		}
	}
	return c
}
