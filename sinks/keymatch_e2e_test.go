package sinks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestKeyMatchesUseTheIndex: a read table keyed by an ENUM or SET column
// and another (orders by status and id) is matched by key in many of a
// batch's statements — a join's fill of new rows, a children refresh, an
// aggregate's groups. MariaDB reads (status, id) IN ((?, ?), (?, ?))
// over an ENUM or SET column by scanning the whole table, so each such
// statement cost a scan of every read row (a 300,000-row load ran at
// ~1,000 rows/s); keyIn then matches by equalities joined by OR, which
// the server looks up in the primary key. Checked with the server's
// EXPLAIN of the statement as rendered for the sink's tables, for each
// key column type that matters, text in latin1 included.
func TestKeyMatchesUseTheIndex(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	for _, c := range []struct{ name, typ, a, b string }{
		{"enum", "ENUM('new','paid','shipped') NOT NULL", "paid", "new"},
		{"latin1 enum", "ENUM('débit','crédit') CHARACTER SET latin1 NOT NULL", "crédit", "débit"},
		{"set", "SET('a','b','c') NOT NULL", "a,b", "c"},
		{"varchar", "VARCHAR(10) NOT NULL", "paid", "new"},
		{"latin1 varchar", "VARCHAR(10) CHARACTER SET latin1 NOT NULL", "Zürich", "Genève"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			src, err := bed.MySQL.CreateDatabase(ctx, "kmsrc")
			if err != nil {
				t.Fatal(err)
			}
			sinkDB, err := bed.MySQL.CreateDatabase(ctx, "kmsink")
			if err != nil {
				t.Fatal(err)
			}
			if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.orders (id INT PRIMARY KEY, status "+c.typ+", amount INT NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			cfg.Source.Tables = []string{src + ".orders"}
			cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
			cfg.Projections = map[string]config.Projection{"orders_by_status": {From: src + ".orders", Sink: "s", Key: []string{"status", "id"},
				Columns: map[string]string{"status": "status", "id": "id", "amount": "amount"}}}
			p, sink := openProjection(t, bed, cfg)
			db := sink.Shards[0].DB()
			// Enough rows that a scan is the optimizer's worst choice.
			if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO orders_by_status (status, id, amount, _rs_version) SELECT IF(seq %% 2 = 0, '%s', '%s'), seq, seq, 1 FROM seq_1_to_20000", c.a, c.b)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "ANALYZE TABLE orders_by_status"); err != nil {
				t.Fatal(err)
			}
			text, err := sink.Shards[0].KeyMatchText(ctx, p, "SELECT amount FROM `orders_by_status` WHERE ", []string{"`status`", "`id`"}, 3)
			if err != nil {
				t.Fatal(err)
			}
			got := testbed.RowsText(t, db, "EXPLAIN "+text, c.a, 2, c.b, 3, c.a, 4)
			var typ string
			for _, line := range strings.Split(got, "\n") {
				if f := strings.Split(line, "|"); len(f) > 3 {
					typ = f[3]
				}
			}
			if typ != "range" && typ != "const" && typ != "eq_ref" {
				t.Errorf("%s: the key match is read as %q, not by the primary key:\n%s\n%s", c.name, typ, text, got)
			}
			// And it finds the rows, whatever the character set.
			var n int
			if err := db.QueryRowContext(ctx, strings.Replace(text, "SELECT amount", "SELECT COUNT(*)", 1), c.a, 2, c.b, 3, c.a, 4).Scan(&n); err != nil || n != 3 {
				t.Errorf("%s: the key match found %d of 3 rows (%v):\n%s", c.name, n, err, text)
			}
		})
	}
}
