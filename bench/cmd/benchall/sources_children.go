package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/readside/readside/event"
)

// orderLinesSource is a nested-children read model: orders, each read row
// carrying its lines as a JSON array ordered by line_no (orders_with_lines,
// children `lines`). Each change of the backlog is one of: a new order
// with 1–5 lines (30%), a line's quantity changed (40%), a line deleted
// (10%), a line moved to another order (10%), an order's status changed
// (10%); every change to lines also updates the orders they belong to
// (their total, as an application keeps it), so an order's commit_us
// says which source transaction last changed it or its lines — the
// latency step's stamp. Its B2 is the raw upsert of the lines as plain
// rows (a copy projection of the line table, b2Config).
func (e *env) orderLinesSource(ctx context.Context, w workload, prefix string, s *source) error {
	src := "`" + e.srcDB + "`."
	if err := e.bed.MySQL.Exec(ctx,
		"CREATE TABLE "+src+"owl_orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL, commit_us BIGINT NOT NULL)",
		"CREATE TABLE "+src+"owl_lines (id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, line_no INT NOT NULL, sku VARCHAR(20) NOT NULL, qty INT NOT NULL, price_cents INT NOT NULL, commit_us BIGINT NOT NULL, KEY (order_id))"); err != nil {
		return err
	}
	tables := []string{"owl_orders", "owl_lines"}
	var err error
	if s.cfgPath, err = e.customConfig(prefix, tables, `  orders_with_lines:
    from: $src.owl_orders
    sink: reads
    table: r_orders_with_lines
    key: [id]
    columns: {id: id, customer_id: customer_id, status: status, total_cents: total_cents, commit_us: commit_us}
    children:
      lines:
        from: $src.owl_lines
        on: {order_id: id}
        columns: {sku: sku, qty: qty, price_cents: price_cents}
        order_by: [line_no]
        limit: 100
`); err != nil {
		return err
	}
	// B2: the lines upserted as plain rows, every column the children
	// state keeps (the link, the elements, the order).
	b2, err := e.b2Config(prefix, tables, `  owl_lines_b2:
    from: $src.owl_lines
    sink: reads
    table: r_owl_lines_b2
    key: [id]
    columns: {id: id, order_id: order_id, line_no: line_no, sku: sku, qty: qty, price_cents: price_cents}
`)
	if err != nil {
		return err
	}
	s.b2 = []string{"-config", b2, "-projection", "owl_lines_b2"}

	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	statuses := []string{"draft", "paid", "shipped", "cancelled"}
	// lineOrder[id] is line id's order; lines lists the lines that exist,
	// at[id] a line's place in it; orders is the highest order id.
	var lineOrder []int64
	var lines []int64
	at := map[int64]int{}
	var orders int64
	addLine := func(order int64) int64 {
		lineOrder = append(lineOrder, order)
		id := int64(len(lineOrder) - 1)
		at[id] = len(lines)
		lines = append(lines, id)
		return id
	}
	removeLine := func(id int64) {
		i := at[id]
		last := lines[len(lines)-1]
		lines[i], at[last] = last, i
		lines = lines[:len(lines)-1]
		delete(at, id)
	}
	lineOrder = append(lineOrder, 0) // ids start at 1
	ut := []upsertTable{
		{head: "INSERT INTO " + src + "owl_orders (id, customer_id, status, total_cents, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE status=VALUES(status), total_cents=VALUES(total_cents), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,'%s',%d,%d)", id, 1+rnd.IntN(10_000), statuses[rnd.IntN(4)], 100+rnd.IntN(1_000_000), us)
			}},
		{head: "INSERT INTO " + src + "owl_lines (id, order_id, line_no, sku, qty, price_cents, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE order_id=VALUES(order_id), qty=VALUES(qty), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,%d,'SKU-%05d',%d,%d,%d)", id, lineOrder[id], 1+rnd.IntN(100), rnd.IntN(50_000), 1+rnd.IntN(20), 100+rnd.IntN(100_000), us)
			}},
		{head: "DELETE FROM " + src + "owl_lines WHERE id IN (", tail: ")",
			row: func(b []byte, id, _ int64) []byte { return fmt.Appendf(b, "%d", id) }},
	}
	// touched keeps an order to one row per transaction (its total and
	// commit_us, written once with the transaction's stamp).
	var touched map[int64]bool
	order := func(batch *upsertBatch, id, us int64) {
		if !touched[id] {
			touched[id] = true
			batch.add(0, id, us)
		}
	}
	newOrder := func(batch *upsertBatch, us int64) {
		orders++
		order(batch, orders, us)
		for range 1 + rnd.IntN(5) {
			batch.add(1, addLine(orders), us)
		}
	}
	pick := func(batch *upsertBatch, us int64) {
		if batch.empty() {
			touched = map[int64]bool{}
		}
		p := rnd.Float64()
		if p < 0.3 || len(lines) < 100 {
			newOrder(batch, us)
			return
		}
		id := lines[rnd.IntN(len(lines))]
		switch {
		case p < 0.7: // quantity
			order(batch, lineOrder[id], us)
			batch.add(1, id, us)
		case p < 0.8:
			order(batch, lineOrder[id], us)
			removeLine(id)
			batch.add(2, id, us)
		case p < 0.9:
			order(batch, lineOrder[id], us)
			lineOrder[id] = 1 + rnd.Int64N(orders)
			order(batch, lineOrder[id], us)
			batch.add(1, id, us)
		default:
			order(batch, 1+rnd.Int64N(orders), us)
		}
	}
	db := e.bed.MySQL.DB()
	// Preload (not part of the backlog): orders with their lines.
	for written := 0; written < w.Preload; {
		n, err := upsertTxnRows(ctx, db, ut, 1000, 0, func(b *upsertBatch, us int64) {
			if b.empty() {
				touched = map[int64]bool{}
			}
			newOrder(b, us)
		}, make([]int, len(ut)))
		if err != nil {
			return err
		}
		written += n
	}
	s.live, s.stamp = upsertLive(db, ut, pick), stampRule{column: "commit_us", onEqual: true}
	s.write = func(ctx context.Context) (map[string]int, error) {
		counts, err := upsertBacklog(ctx, db, w, ut, pick)
		if err != nil {
			return nil, fmt.Errorf("writing the backlog of %s: %w", w.Name, err)
		}
		return map[string]int{s.proj.Topic: counts[0], event.TopicFor(s.cfg.Kafka.TopicPrefix, e.srcDB, "owl_lines"): counts[1] + counts[2]}, nil
	}
	return nil
}

// b2Config writes a config beside a workload's with the same source,
// topics and sink, holding only the projection B2 measures.
func (e *env) b2Config(prefix string, tables []string, projection string) (string, error) {
	return e.writeConfig(prefix+".b2.yaml", prefix, tables, projection)
}
