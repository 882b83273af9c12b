package verify_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestVerifyJoinedGroups: revenue per store, a group column joined from
// the staff member who took each payment. After a live workload that
// moves staff between stores, verify computes the groups through the
// join on the source and finds them EQUAL. A staff member moved to
// another store without the binlog (the join's state is stale: both
// stores differ) and a group's revenue edited on the sink are named;
// --repair re-publishes the staff of those stores and their payments and
// rebuilds the groups; then verify is EQUAL and a live move is exact.
func TestVerifyJoinedGroups(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "vjg")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "vjgreads")
	if err != nil {
		t.Fatal(err)
	}
	staff, pay := "`"+src+"`.staff", "`"+src+"`.payment"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+staff+" (staff_id INT PRIMARY KEY, store_id INT NULL)",
		"CREATE TABLE "+pay+" (payment_id INT PRIMARY KEY, staff_id INT NULL, amount DECIMAL(9,2) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("vjg", src+".payment", src+".staff")
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"revenue_by_store": {From: src + ".payment", Sink: "reads",
		Join:       []config.Join{{From: src + ".staff", On: map[string]string{"staff_id": "staff_id"}, Columns: map[string]string{"store_id": "store_id"}}},
		GroupBy:    []string{"store_id"},
		Aggregates: map[string]string{"revenue": "sum(amount)", "payments": "count(*)"}}}
	r := runOne(t, bed, cfg, src)
	expected := func() string {
		return rowsText(t, "SELECT s.store_id, SUM(p.amount), COUNT(*) FROM "+pay+" p JOIN "+staff+" s ON s.staff_id = p.staff_id WHERE s.store_id IS NOT NULL GROUP BY 1 ORDER BY 1")
	}
	actual := func() string {
		return rowsText(t, "SELECT store_id, revenue, payments FROM `"+sinkDB+"`.revenue_by_store ORDER BY 1")
	}
	converge := func(what string) {
		t.Helper()
		testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
			w, g := expected(), actual()
			return w == g, what + ": " + testbed.FirstDifference(g, w)
		})
	}
	const stores = 6
	rng := rand.New(rand.NewPCG(rand.Uint64(), 31))
	var load []string
	for i := 1; i <= 12; i++ {
		load = append(load, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", staff, i, 1+i%stores))
	}
	for i := 1; i <= 300; i++ {
		load = append(load, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, %d.%02d)", pay, i, 1+rng.IntN(12), rng.IntN(100), rng.IntN(100)))
	}
	for range 10 {
		load = append(load, fmt.Sprintf("UPDATE %s SET store_id = %d WHERE staff_id = %d", staff, 1+rng.IntN(stores), 1+rng.IntN(12)))
	}
	// Each store keeps staff 1..6's payments: no group empties below.
	for i := 1; i <= stores; i++ {
		load = append(load, fmt.Sprintf("UPDATE %s SET store_id = %d WHERE staff_id = %d", staff, i, i))
	}
	if err := bed.MySQL.Exec(ctx, load...); err != nil {
		t.Fatal(err)
	}
	converge("after the load")
	v := r.verifier(t, r.stats)
	if rep := runVerify(t, v); rep.Drift() != 0 || rep.Unsettled != 0 {
		t.Fatalf("converged projection: drift %d, unsettled %d", rep.Drift(), rep.Unsettled)
	}
	// Staff 7 moves from its store to another without the binlog; store 3's
	// revenue is edited on the sink.
	from := column(rowsText(t, fmt.Sprintf("SELECT store_id FROM %s WHERE staff_id = 7", staff)))[0]
	to := "1"
	if from == "1" {
		to = "2"
	}
	edited := "3"
	for edited == from || edited == to {
		edited = fmt.Sprint(int(edited[0]-'0') + 1)
	}
	if n := column(rowsText(t, "SELECT COUNT(*) FROM "+pay+" WHERE staff_id = 7"))[0]; n == "0" {
		bed.MySQL.Exec(ctx, "INSERT INTO "+pay+" VALUES (1000, 7, 5.00)")
		converge("a payment of staff 7")
	}
	testbed.Unlogged(t, bed.MySQL.DB(), "UPDATE "+staff+" SET store_id = "+to+" WHERE staff_id = 7")
	if _, err := r.sink.Shards[0].DB().ExecContext(ctx, "UPDATE revenue_by_store SET revenue = revenue + 1 WHERE store_id = "+edited); err != nil {
		t.Fatal(err)
	}
	rep := runVerify(t, v)
	var got []string
	for _, d := range rep.Samples {
		got = append(got, d.Kind+" "+d.Key["store_id"])
	}
	slices.Sort(got)
	want := []string{"different " + from, "different " + to, "different " + edited}
	slices.Sort(want)
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("verify of the corrupted groups: got %q, want %q", got, want)
	}
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, table, where)
	}
	res, err := v.Repair(ctx, rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair of revenue_by_store: %+v", *res)
	if res.Remaining != 0 {
		t.Fatalf("repair left %d groups differing", res.Remaining)
	}
	if rep := runVerify(t, v); rep.Drift() != 0 {
		t.Fatalf("after repair: drift %d", rep.Drift())
	}
	converge("after repair")
	bed.MySQL.Exec(ctx, "UPDATE "+staff+" SET store_id = "+from+" WHERE staff_id = 7")
	converge("a live move after repair")
}
