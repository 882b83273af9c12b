package verify_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/verify"
)

// oldHome is the shard (0: -80, 1: 80-) readside's routing before Vitess
// keyspace ids picked: the xxhash64 of the value's text compared as a
// number, not by its little-endian bytes.
func oldHome(cid int) int {
	if xxhash.Sum64String(strconv.Itoa(cid)) < 1<<63 {
		return 0
	}
	return 1
}

// TestVerifyOldRouting: a read table sharded by the routing before Vitess
// keyspace ids (rows on the shard the big-endian hash picked) has about
// half its rows misplaced. verify names them — count and sample keys per
// shard — and --repair moves them to the shard Vitess would pick; after
// that the table verifies EQUAL. A repair that cannot re-publish (the
// tailer unreachable) deletes nothing: a move deletes the old copy only
// after the row is on its home shard.
func TestVerifyOldRouting(t *testing.T) {
	bed := testbed.Get(t)
	s := newShop(t, bed)
	ctx := t.Context()
	s.run(t)
	const customers, orders = 200, 4000
	s.load(t, customers, orders)
	s.waitConverged(t, 3*time.Minute)

	// Put every customer's rows where the old routing put them, keeping
	// their columns and versions (as a table filled by the old release).
	movedTo := map[string]int64{}
	var moved int64
	for cid := 1; cid <= customers+customers/10; cid++ {
		from, to := s.home(cid), oldHome(cid)
		if from == to {
			continue
		}
		res, err := s.sink.Shards[to].DB().ExecContext(ctx, "INSERT INTO `"+s.shards[to]+"`.orders_by_customer SELECT * FROM `"+s.shards[from]+"`.orders_by_customer WHERE customer_id = ?", cid)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := res.RowsAffected()
		s.shardExec(t, from, "DELETE FROM orders_by_customer WHERE customer_id = ?", cid)
		movedTo[s.sink.Shards[to].Range.Text] += n
		moved += n
	}
	if len(movedTo) != 2 {
		t.Fatalf("the old routing disagrees with Vitess's only towards %v: the test needs rows misplaced on both shards", movedTo)
	}
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatal("moving rows between shards changed the union of the shards")
	}

	v := s.verifier(t, verify.Options{ChunkRows: 1000, Settle: 8 * time.Second, Samples: 5})
	rep, err := v.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("a table sharded by the old routing:\n%s", text.String())
	if rep.Misplaced != moved || rep.Missing != 0 || rep.Extra != 0 || rep.Different != 0 || rep.Unsettled != 0 {
		t.Fatalf("want %d misplaced and nothing else; got missing %d, extra %d, different %d, misplaced %d, unsettled %d",
			moved, rep.Missing, rep.Extra, rep.Different, rep.Misplaced, rep.Unsettled)
	}
	if fmt.Sprint(rep.MisplacedByShard) != fmt.Sprint(movedTo) {
		t.Errorf("misplaced by shard %v, want %v", rep.MisplacedByShard, movedTo)
	}
	samples := map[string]int{}
	for _, d := range rep.Samples {
		if d.Kind != "misplaced" {
			continue
		}
		samples[d.Shard]++
		cid, _ := strconv.Atoi(d.Key["customer_id"])
		if got := s.sink.Shards[oldHome(cid)].Range.Text; got != d.Shard {
			t.Errorf("sample customer_id=%s,id=%s reported on shard %s; the old routing put it on %s", d.Key["customer_id"], d.Key["id"], d.Shard, got)
		}
	}
	for sh := range movedTo {
		if samples[sh] != 5 {
			t.Errorf("%d sample keys of shard %s, want 5 (Samples)", samples[sh], sh)
		}
	}
	for sh, n := range movedTo {
		if want := fmt.Sprintf("%d on shard %s", n, sh); !strings.Contains(text.String(), want) {
			t.Errorf("report does not say %q", want)
		}
	}

	// A repair whose re-publishing fails deletes no copy: every row is
	// still on some shard.
	down := errors.New("tailer unreachable")
	if _, err := v.Repair(ctx, rep, func(context.Context, string, string) error { return down }, 10*time.Second); !errors.Is(err, down) {
		t.Fatalf("repair with a failing tailer: %v, want its error", err)
	}
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatal("a repair that could not re-publish deleted rows")
	}

	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, s.cfg.Source.DSN.Reveal(), s.cfg.Source.TLS, s.cfg.Source.Snapshot.SignalDB, s.cfg.Source.ServerID, table, where)
	}
	res, err := v.Repair(ctx, rep, request, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair: %+v", *res)
	if res.Remaining != 0 || res.Deleted != int(moved) || res.Published != int(moved) {
		t.Fatalf("repair: %d keys left, %d copies deleted and %d keys re-published; want 0, %d, %d", res.Remaining, res.Deleted, res.Published, moved, moved)
	}
	if want, got := s.expected(t), s.actual(t); want != got {
		t.Fatal("after the repair the read table differs from the SQL join")
	}
	// Independently of verify: every row is on the shard Vitess picks.
	for i, db := range s.shards {
		rows, err := bed.MySQL.DB().QueryContext(ctx, "SELECT DISTINCT customer_id FROM `"+db+"`.orders_by_customer")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var cid int
			if err := rows.Scan(&cid); err != nil {
				t.Fatal(err)
			}
			if s.home(cid) != i {
				t.Errorf("customer %d's rows are on shard %s after the repair", cid, s.sink.Shards[i].Range.Text)
			}
		}
		rows.Close()
	}
	rep, err = v.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 {
		t.Fatalf("verify after the repair: %+v", rep)
	}
}
