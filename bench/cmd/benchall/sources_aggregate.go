package main

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// customerStatsSource is an aggregate read model on Zipfian groups: orders
// counted, summed and dated per customer (customer_order_stats, one read
// row per customer), customers Zipfian (s = 1.1) over 10,000, so a few
// customers hold most orders and a batch touches the hottest groups many
// times. The backlog: 50% new orders, 35% updates of an order's total
// and status, 10% moves of an order to another customer, 5% deletes.
// Its B2 is the raw upsert of the group rows (rawupsert -aggregate).
// max(commit_us) is the bench's own aggregate: the latency step's stamp.
// customer_distinct_stats is the same stream counted distinct per
// customer: its statuses (4 values: the reference counts of a hot group
// rarely cross 0) and its totals (nearly one value per order: almost
// every change adds or removes a value), each with its state table; its
// B2 is the same raw upsert of the group rows plus the reference counts
// the batch changed (the state any exact design of count(distinct) keeps).
func (e *env) customerStatsSource(ctx context.Context, w workload, prefix string, s *source) error {
	const customers = 10_000
	src := "`" + e.srcDB + "`."
	tbl, decl := "cos_orders", `  customer_order_stats:
    from: $src.cos_orders
    sink: reads
    table: r_customer_order_stats
    group_by: [customer_id]
    aggregates: {orders: "count(*)", total_cents: "sum(total_cents)", first_order_at: "min(created_at)",
                 last_order_at: "max(created_at)", last_commit_us: "max(commit_us)"}
`
	if w.Kind == "customer_distinct_stats" {
		tbl, decl = "cds_orders", `  customer_distinct_stats:
    from: $src.cds_orders
    sink: reads
    table: r_customer_distinct_stats
    group_by: [customer_id]
    aggregates: {orders: "count(*)", statuses: "count(distinct status)", totals: "count(distinct total_cents)",
                 last_commit_us: "max(commit_us)"}
`
	}
	if err := e.bed.MySQL.Exec(ctx,
		"CREATE TABLE "+src+tbl+" (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL, created_at DATETIME(6) NOT NULL, commit_us BIGINT NOT NULL, KEY (customer_id))"); err != nil {
		return err
	}
	var err error
	s.cfgPath, err = e.customConfig(prefix, []string{tbl}, decl)
	if err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	zipf := rand.NewZipf(rnd, 1.1, 1, customers-1)
	statuses := []string{"draft", "paid", "shipped", "cancelled"}
	// customer[id] is order id's customer (0: none yet); live lists the
	// orders that exist, pos[id] an order's place in it.
	var customer []int32
	var live []int64
	pos := map[int64]int{}
	add := func(id int64) {
		pos[id] = len(live)
		live = append(live, id)
	}
	remove := func(id int64) {
		i := pos[id]
		last := live[len(live)-1]
		live[i], pos[last] = last, i
		live = live[:len(live)-1]
		delete(pos, id)
	}
	tables := []upsertTable{
		{head: "INSERT INTO " + src + tbl + " (id, customer_id, status, total_cents, created_at, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE customer_id=VALUES(customer_id), status=VALUES(status), total_cents=VALUES(total_cents), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,'%s',%d,'2026-01-01' + INTERVAL %d SECOND,%d)", id, customer[id], statuses[rnd.IntN(4)], 100+rnd.IntN(1_000_000), id*60, us)
			}},
		{head: "DELETE FROM " + src + tbl + " WHERE id IN (", tail: ")",
			row: func(b []byte, id, _ int64) []byte { return fmt.Appendf(b, "%d", id) }},
	}
	newOrder := func() int64 {
		customer = append(customer, int32(1+zipf.Uint64()))
		id := int64(len(customer) - 1)
		add(id)
		return id
	}
	customer = append(customer, 0) // ids start at 1
	db := e.bed.MySQL.DB()
	// Preload (not part of the backlog): the orders updates pick from.
	for range w.Preload {
		newOrder()
	}
	if err := tables[0].preload(ctx, db, int64(w.Preload)); err != nil {
		return err
	}
	pick := func(batch *upsertBatch, us int64) {
		p := rnd.Float64()
		if p < 0.5 || len(live) < 100 {
			batch.add(0, newOrder(), us)
			return
		}
		id := live[rnd.IntN(len(live))]
		switch {
		case p < 0.85: // total and status
		case p < 0.95:
			customer[id] = int32(1 + zipf.Uint64())
		default:
			remove(id)
			batch.add(1, id, us)
			return
		}
		batch.add(0, id, us)
	}
	s.live, s.stamp = upsertLive(db, tables, pick), stampRule{column: "last_commit_us"}
	s.b2 = []string{"-aggregate"}
	s.write = func(ctx context.Context) (map[string]int, error) {
		counts, err := upsertBacklog(ctx, db, w, tables, pick)
		if err != nil {
			return nil, fmt.Errorf("writing the backlog of %s: %w", w.Name, err)
		}
		return map[string]int{s.proj.Topic: counts[0] + counts[1]}, nil
	}
	return nil
}
