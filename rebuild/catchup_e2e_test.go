package rebuild

import (
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestCatchUpKeepsNewerLiveChanges: after the swap the rebuild's catch-up
// re-applies records older than some the live projector has already
// applied to the same table (real MariaDB sink). A record it re-applies
// must not undo the newer one:
//   - a payment's staff member moved store 1 → 3 by the live projector,
//     then the older move to store 2 re-applied by the catch-up: the
//     payment stays in store 3's group (a regroup by the catch-up's own,
//     older parent state would move it to store 2, and nothing after
//     the catch-up's end would move it back);
//   - a row deleted by the live projector, then an older upsert of it
//     re-applied by the catch-up: the row stays deleted (without the
//     live projector's tombstone the upsert brings it back).
func TestCatchUpKeepsNewerLiveChanges(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "catchup")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "catchup_r")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.payment (id INT PRIMARY KEY, staff_id INT NULL, amount DECIMAL(7,2) NOT NULL)",
		"CREATE TABLE `"+src+"`.staff (staff_id INT PRIMARY KEY, store_id INT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".payment", src + ".staff"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{
		"by_store": {From: src + ".payment", Sink: "s",
			Join:    []config.Join{{From: src + ".staff", On: map[string]string{"staff_id": "staff_id"}, Columns: map[string]string{"store_id": "store_id"}}},
			GroupBy: []string{"store_id"}, Aggregates: map[string]string{"n": "count(*)"}},
		"payments": {From: src + ".payment", Sink: "s", Key: []string{"id"}, Columns: map[string]string{"id": "id", "amount": "amount"}},
	}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(ctx, "s", cfg.Sinks["s"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	byName := map[string]*projections.Projection{}
	for _, p := range ps {
		byName[p.Name] = p
		types, err := p.SourceColumns(ctx, bed.MySQL.DB())
		if err != nil {
			t.Fatal(err)
		}
		// The live projection's tables, and the catch-up's, which the
		// rebuild's fill created with the shadow table.
		if err := sink.Exec(ctx, append(sinks.DDL(p, types), sinks.DDL((&Rebuild{p: p}).shadow(p.Table), types)...)); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(p *projections.Projection, b *projections.Batch) {
		t.Helper()
		if err := sink.Apply(ctx, p, b); err != nil {
			t.Fatal(err)
		}
	}
	staff := func(store int, v uint64) projections.ParentWrite {
		return projections.ParentWrite{Join: 0, Key: "1", KeyValues: projections.ValuesOf(1), Values: projections.ValuesOf(store), Version: v}
	}

	live := byName["by_store"]
	catch := (&Rebuild{p: live}).catchUp(live.Table)
	apply(live, &projections.Batch{Parents: []projections.ParentWrite{staff(1, 1)},
		Contributions: []projections.Contribution{{SourceKey: `{"id":7}`, Version: 2, Group: []projections.Value{{}},
			Values: projections.ValuesOf(1), Parents: []projections.ParentRef{{Key: "1", Values: projections.ValuesOf(1)}}}}})
	apply(live, &projections.Batch{Parents: []projections.ParentWrite{staff(3, 10)}})
	apply(catch, &projections.Batch{Parents: []projections.ParentWrite{staff(2, 5)}})
	if got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT store_id, n FROM `"+sinkDB+"`.`"+live.Table+"` ORDER BY 1"); got != "3|1|\n" {
		t.Errorf("groups after the catch-up re-applied an older move to store 2: %q, want store 3's group only (3|1|)", got)
	}

	rows := byName["payments"]
	catch = (&Rebuild{p: rows}).catchUp(rows.Table)
	row := func(amount string) []projections.Value { // in rows.Columns order
		var xs []any
		for _, c := range rows.Columns {
			if c.Name == "id" {
				xs = append(xs, 5)
			} else {
				xs = append(xs, amount)
			}
		}
		return projections.ValuesOf(xs...)
	}
	apply(rows, &projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: "5", Values: row("1.00"), Version: 1}}})
	apply(rows, &projections.Batch{Writes: []projections.Write{{Kind: projections.Delete, Key: "5", Values: projections.ValuesOf(5), Version: 10}}})
	apply(catch, &projections.Batch{Writes: []projections.Write{{Kind: projections.Upsert, Key: "5", Values: row("2.00"), Version: 5}}})
	if got := testbed.RowsText(t, bed.MySQL.DB(), "SELECT id, amount FROM `"+sinkDB+"`.`"+rows.Table+"`"); got != "" {
		t.Errorf("after the catch-up re-applied an upsert older than the live projector's delete, the table holds %q, want nothing", got)
	}
}
