package sinks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestApplyJoinedGroupsConcurrently: an aggregate grouped by a film's
// category two joins away (payment → inventory → film), applied by eight
// concurrent writers whose batches mix payments, inventory items moving
// film and films changing category (or losing it), each event with its
// own version, so batches land in any order and race at every level of
// the chain. The read table ends equal to the groups the newest version
// of every row gives. It fails when batches do not take turns: a regroup
// that reads a chain another batch is moving counts rows in the wrong
// group.
func TestApplyJoinedGroupsConcurrently(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "jgc", "id INT PRIMARY KEY, inv INT NULL, amount DECIMAL(8,2) NOT NULL")
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.inv (inv_id INT PRIMARY KEY, film INT NOT NULL)",
		"CREATE TABLE `"+src+"`.film (film_id INT PRIMARY KEY, cat INT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".t", src + ".inv", src + ".film"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"stats": {From: src + ".t", Sink: "s",
		Join: []config.Join{{From: src + ".inv", As: "i", On: map[string]string{"inv_id": "inv"}},
			{From: src + ".film", Via: "i", On: map[string]string{"film_id": "film"}, Columns: map[string]string{"cat": "cat"}}},
		GroupBy: []string{"cat"}, Aggregates: map[string]string{"n": "count(*)", "total": "sum(amount)"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(ctx, "s", cfg.Sinks["s"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
		t.Fatal(err)
	}

	// The newest event of each row, as the sink must end up seeing it.
	type row struct {
		v    uint64
		vals []int // payment: inv (0: none), cents; inventory: film; film: cat (0: none); nil: deleted
	}
	var mu sync.Mutex
	newest := map[string]row{}
	var clock atomic.Uint64
	note := func(key string, r row) {
		mu.Lock()
		defer mu.Unlock()
		if r.v > newest[key].v {
			newest[key] = r
		}
	}
	const writers, batches, events = 8, 60, 6
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	actx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	errs := make(chan error, writers)
	for w := range writers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		go func() {
			for range batches {
				b := &projections.Batch{}
				for range events {
					v := clock.Add(1)
					switch k := rng.IntN(10); {
					case k < 5:
						id, inv, cents := 1+rng.IntN(40), rng.IntN(7), rng.IntN(10000)
						c := projections.Contribution{SourceKey: fmt.Sprintf(`{"id":%d}`, id), Version: v}
						r := row{v: v}
						if rng.IntN(6) > 0 {
							c.Group = []projections.Value{{}}
							c.Values = projections.ValuesOf(1, fmt.Sprintf("%d.%02d", cents/100, cents%100))
							ref := projections.ParentRef{}
							if inv > 0 {
								ref = projections.ParentRef{Key: fmt.Sprint(inv), Values: projections.ValuesOf(inv)}
							}
							c.Parents = []projections.ParentRef{ref, {}}
							r.vals = []int{inv, cents}
						}
						b.Contributions = append(b.Contributions, c)
						note(c.SourceKey, r)
					case k < 8:
						inv, film := 1+rng.IntN(6), 1+rng.IntN(4)
						pw := projections.ParentWrite{Join: 0, Key: fmt.Sprint(inv), KeyValues: projections.ValuesOf(inv), Version: v}
						r := row{v: v}
						if rng.IntN(8) > 0 {
							pw.Values, r.vals = projections.ValuesOf(film), []int{film}
						}
						b.Parents = append(b.Parents, pw)
						note(fmt.Sprint("inv", inv), r)
					default:
						film, cat := 1+rng.IntN(4), rng.IntN(4)
						pw := projections.ParentWrite{Join: 1, Key: fmt.Sprint(film), KeyValues: projections.ValuesOf(film), Version: v}
						r := row{v: v, vals: []int{cat}}
						if cat > 0 {
							pw.Values = projections.ValuesOf(cat)
						} else {
							pw.Values = []projections.Value{{}}
						}
						b.Parents = append(b.Parents, pw)
						note(fmt.Sprint("film", film), r)
					}
				}
				if err := sink.Apply(actx, p, b); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	n, cents := map[int]int{}, map[int]int{}
	for key, r := range newest {
		var id int
		if _, err := fmt.Sscanf(key, `{"id":%d}`, &id); err != nil || r.vals == nil || r.vals[0] == 0 {
			continue
		}
		inv := newest[fmt.Sprint("inv", r.vals[0])]
		if inv.vals == nil {
			continue
		}
		film := newest[fmt.Sprint("film", inv.vals[0])]
		if film.vals == nil || film.vals[0] == 0 {
			continue
		}
		n[film.vals[0]]++
		cents[film.vals[0]] += r.vals[1]
	}
	want := ""
	for cat := 1; cat < 4; cat++ {
		if n[cat] > 0 {
			want += fmt.Sprintf("%d|%d|%d.%02d|\n", cat, n[cat], cents[cat]/100, cents[cat]%100)
		}
	}
	t.Logf("groups: %q", want)
	if got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT cat, n, total FROM stats ORDER BY cat"); got != want {
		t.Fatalf("after %d concurrent batches: %s", writers*batches, testbed.FirstDifference(got, want))
	}
}
