package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// messagesMonthSource is the chat again, projected into bounded
// partitions: messages_by_sender_month keyed by (sender, month, id), the
// month a DATE_FORMAT bucket of created_at, with computed columns beside
// the copies. created_at spreads over about a year, and an edit moves it by
// up to 20 days, so some edits move their row to another month's
// partition (a key move: the old read row's delete and the new one's
// upsert). Its B2 is the raw upsert of the same computed rows.
func (e *env) messagesMonthSource(ctx context.Context, w workload, prefix string, s *source) error {
	return e.chatSource(ctx, w, prefix, s, chatShape{table: "messages_m", projection: `  messages_by_sender_month:
    from: $src.$table
    sink: reads
    table: r_messages_by_sender_month
    key: [sender_id, month, id]
    shard_by: sender_id
    columns: {sender_id: sender_id, month: "DATE_FORMAT(created_at, '%Y-%m')", id: id, room: "UPPER(room)",
              body: body, body_chars: "CHAR_LENGTH(body)", created_day: "DATE(created_at)",
              size_class: "CASE WHEN CHAR_LENGTH(body) < 100 THEN 'short' WHEN CHAR_LENGTH(body) < 200 THEN 'medium' ELSE 'long' END",
              commit_us: commit_us}
`, step: "SECOND", stepPerID: 1000, moveDays: 20})
}

// ordersRegionSource is a join through a parent's parent: orders carry
// their customer's name and their customer's region's name
// (orders → customers → regions), its fan-out in the background. The
// backlog: 3% region renames, which fan out to every order of every
// customer in the region; 5% customer
// updates, half of them (an even new region) moving the customer to
// another region; the rest
// orders, 60% of them new.
func (e *env) ordersRegionSource(ctx context.Context, w workload, prefix string, s *source) error {
	const customers, regions = 10_000, 100
	src := "`" + e.srcDB + "`."
	if err := e.bed.MySQL.Exec(ctx,
		"CREATE TABLE "+src+"owr_regions (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, commit_us BIGINT NOT NULL)",
		"CREATE TABLE "+src+"owr_customers (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, region_id INT NOT NULL, commit_us BIGINT NOT NULL, KEY (region_id))",
		"CREATE TABLE "+src+"owr_orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL, created_at DATETIME(6) NOT NULL, commit_us BIGINT NOT NULL, KEY (customer_id))"); err != nil {
		return err
	}
	// A transactional sink refuses a background fan-out (its copy would
	// land after the commit): in_batch there, and in its row-mode twin.
	fanOut := "\n    fan_out: background"
	if w.InBatch {
		fanOut = ""
	}
	var err error
	s.cfgPath, err = e.customConfig(prefix, []string{"owr_regions", "owr_customers", "owr_orders"}, `  orders_with_region:
    from: $src.owr_orders
    sink: reads
    table: r_orders_with_region
    key: [customer_id, id]
    shard_by: customer_id`+fanOut+`
    columns: {customer_id: customer_id, id: id, status: status, total_cents: total_cents, created_at: created_at, commit_us: commit_us}
    join:
      - from: $src.owr_customers
        as: c
        on: {id: customer_id}
        columns: {customer_name: name}
      - from: $src.owr_regions
        via: c
        on: {id: region_id}
        columns: {region_name: name}
`)
	if err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	statuses := []string{"draft", "paid", "shipped", "cancelled"}
	tables := []upsertTable{
		{head: "INSERT INTO " + src + "owr_regions (id, name, commit_us) VALUES ", tail: " ON DUPLICATE KEY UPDATE name=VALUES(name), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,'region-%d-%s',%d)", id, id, strconv.FormatUint(rnd.Uint64(), 36), us)
			}},
		{head: "INSERT INTO " + src + "owr_customers (id, name, region_id, commit_us) VALUES ", tail: " ON DUPLICATE KEY UPDATE name=VALUES(name), region_id=IF(VALUES(region_id) % 2 = 0, VALUES(region_id), region_id), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,'customer-%d-%s',%d,%d)", id, id, strconv.FormatUint(rnd.Uint64(), 36), 1+rnd.IntN(regions), us)
			}},
		{head: "INSERT INTO " + src + "owr_orders (id, customer_id, status, total_cents, created_at, commit_us) VALUES ", tail: " ON DUPLICATE KEY UPDATE status=VALUES(status), total_cents=VALUES(total_cents), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,'%s',%d,'2026-01-01' + INTERVAL %d SECOND,%d)", id, 1+rnd.IntN(customers), statuses[rnd.IntN(4)], 100+rnd.IntN(1_000_000), id, us)
			}},
	}
	db := e.bed.MySQL.DB()
	// Preload (not part of the backlog): every region and customer, 30k orders.
	for i, n := range []int64{regions, customers, 30_000} {
		if err := tables[i].preload(ctx, db, n); err != nil {
			return err
		}
	}
	orders := int64(30_000)
	pick := func(batch *upsertBatch, us int64) {
		switch p := rnd.Float64(); {
		case p < 0.03:
			batch.add(0, 1+rnd.Int64N(regions), us)
		case p < 0.08:
			batch.add(1, 1+rnd.Int64N(customers), us)
		default:
			id := 1 + rnd.Int64N(orders)
			if p < 0.08+0.92*0.6 {
				orders++
				id = orders
			}
			batch.add(2, id, us)
		}
	}
	// Live, an order's read row shows its change when its commit_us
	// moves forward; a customer's or region's fan-out leaves it as is.
	s.live, s.stamp = upsertLive(db, tables, pick), stampRule{column: "commit_us"}
	s.write = func(ctx context.Context) (map[string]int, error) {
		counts, err := upsertBacklog(ctx, db, w, tables, pick)
		if err != nil {
			return nil, fmt.Errorf("writing the backlog of %s: %w", w.Name, err)
		}
		return map[string]int{s.proj.Topic: counts[2], s.proj.Joins[0].Topic: counts[1], s.proj.Joins[1].Topic: counts[0]}, nil
	}
	return nil
}
