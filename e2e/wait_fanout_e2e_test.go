package e2e

// /wait with a background fan-out: a parent change is in every read row
// of the parent when /wait answers, not only in the rows its batch wrote.

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestWaitBackgroundFanOut: orders → customers → regions with
// fan_out: background, 2,000 orders over 40 customers in two regions. For
// each of a series of region renames and customers moving region, /wait
// with the write's GTID answers 200 and the read table right after equals
// the SQL join over every order: the rename's copy into the region's
// ~1,000 other orders runs after its batch, and /wait waits for it. The
// copies' lag gauges are exposed and fall back to 0.
func TestWaitBackgroundFanOut(t *testing.T) {
	bed := testbed.Get(t)
	p := newOpsPipeline(t, "waitfo", bed.Kafka.Brokers(), "")
	ctx := t.Context()
	src := "`" + p.src + "`."
	for _, ddl := range []string{
		"CREATE TABLE " + src + "regions (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
		"CREATE TABLE " + src + "customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, region_id INT NULL)",
		"CREATE TABLE " + src + "orders (id INT PRIMARY KEY, customer_id INT NOT NULL, total INT NOT NULL, KEY (customer_id))",
		"INSERT INTO " + src + "regions VALUES (1, 'north'), (2, 'south')",
		"INSERT INTO " + src + "customers SELECT seq, CONCAT('c', seq), 1 + seq % 2 FROM " + src + "seq_1_to_40",
		"INSERT INTO " + src + "orders SELECT seq, 1 + seq % 40, seq FROM " + src + "seq_1_to_2000",
	} {
		if err := bed.MySQL.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "tables: ["+p.src+".messages]", fmt.Sprintf("tables: [%[1]s.messages, %[1]s.regions, %[1]s.customers, %[1]s.orders]", p.src), 1)
	text = strings.Replace(text, "projections:\n", fmt.Sprintf(`projections:
  orders_with_region:
    from: %[1]s.orders
    sink: reads
    key: [customer_id, id]
    shard_by: customer_id
    fan_out: background
    columns: {customer_id: customer_id, id: id, total: total}
    join:
      - from: %[1]s.customers
        as: c
        on: {id: customer_id}
        columns: {customer_name: name}
      - from: %[1]s.regions
        via: c
        on: {id: region_id}
        columns: {region_name: name}
`, p.src), 1)
	if err := os.WriteFile(p.cfgPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.waitReady(90 * time.Second)

	join := "SELECT o.customer_id, o.id, c.name, r.name FROM " + src + "orders o LEFT JOIN " + src + "customers c ON c.id = o.customer_id LEFT JOIN " + src + "regions r ON r.id = c.region_id ORDER BY 1, 2"
	read := "SELECT customer_id, id, customer_name, region_name FROM `" + p.sink + "`.orders_with_region ORDER BY 1, 2"
	db := bed.MySQL.DB()
	check := func(what, gtid string) {
		t.Helper()
		code, body := p.wait(ctx, p.httpAddr, "orders_with_region", gtid, "30s")
		if code != http.StatusOK {
			t.Fatalf("%s (gtid %s): /wait %d %v", what, gtid, code, body)
		}
		if want, got := testbed.RowsText(t, db, join), testbed.RowsText(t, db, read); want != got {
			t.Fatalf("%s: /wait answered 200 but the read table differs from the SQL join:\nwant:\n%.1500s\ngot:\n%.1500s", what, want, got)
		}
	}
	check("the snapshot", writeGTID(t, bed.MySQL, "UPDATE "+src+"orders SET total = total + 1 WHERE id = 1"))
	for i := 1; i <= 12; i++ {
		if i%3 == 0 {
			cid := i
			check(fmt.Sprintf("customer %d moves region", cid), writeGTID(t, bed.MySQL, "UPDATE "+src+"customers SET region_id = 3 - region_id WHERE id = ?", cid))
			continue
		}
		rid := 1 + i%2
		check(fmt.Sprintf("rename %d of region %d", i, rid), writeGTID(t, bed.MySQL, "UPDATE "+src+"regions SET name = ? WHERE id = ?", fmt.Sprintf("region %d v%d", rid, i), rid))
	}
	t.Logf("12 region renames and customer moves: each in all 2,000 rows when /wait answered")
	// The copies' own lag is exposed, and back to nothing once caught up.
	for _, sample := range []string{`readside_projection_fan_out_pending{projection="orders_with_region"}`, `readside_projection_fan_out_pending_seconds{projection="orders_with_region"}`} {
		testbed.Eventually(t, 10*time.Second, func() (bool, string) {
			v := metric(ctx, t, p.httpAddr, sample)
			return v == 0, fmt.Sprintf("%s = %v, want 0 once every parent is copied (-1: not exposed)", sample, v)
		})
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}
