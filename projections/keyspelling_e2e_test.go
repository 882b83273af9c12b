package projections_test

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestKeySpelledOtherwise: text keys under a _ci, PAD SPACE collation (the
// servers' default kind), changed to another spelling of the same value
// ('ab' → 'AB', 'cd' → 'cd '). The source keeps one row with the new
// spelling; to the sink, whose tables compare keys the same way, the
// tailer's delete of the old key and create of the new one are one row.
// The create must win whichever is applied first (it takes the next
// version), and an upsert that finds the row under the old spelling must
// write the new one (key columns assigned by the version guard). Three
// projections: a copy keyed by the code, a join on it (a parent whose key
// changes spelling is still there), and a read key moved to another
// spelling by the child's own update. Each compares the exact bytes.
//
// With kafka.format debezium the delete and create of a key change carry
// one source position: the create's version steps past the delete's
// (projections.Build, by the __debezium.oldkey header).
func TestKeySpelledOtherwise(t *testing.T) {
	for _, format := range []config.Format{config.FormatReadside, config.FormatDebezium} {
		t.Run(string(format), func(t *testing.T) { testKeySpelledOtherwise(t, format) })
	}
}

func testKeySpelledOtherwise(t *testing.T, format config.Format) {
	bed := testbed.Get(t)
	s := newTablesShop(t, bed, "ksp", []string{"customers", "orders"},
		"CREATE TABLE `%s`.customers (code VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, name VARCHAR(30) NOT NULL)",
		"CREATE TABLE `%s`.orders (id INT PRIMARY KEY, cust_code VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, amount INT NOT NULL)")
	s.cfg.Kafka.Format = format
	s.cfg.Projections = map[string]config.Projection{
		"customer_copy": {
			From: s.src + ".customers", Sink: "reads", Key: []string{"code"},
			Columns: map[string]string{"code": "code", "name": "name"},
		},
		"orders_named": {
			From: s.src + ".orders", Sink: "reads", Key: []string{"id"},
			Columns: map[string]string{"id": "id", "cust_code": "cust_code", "amount": "amount"},
			Join:    []config.Join{{From: s.src + ".customers", On: map[string]string{"code": "cust_code"}, Columns: map[string]string{"customer": "name"}}},
		},
		"orders_by_code": {
			From: s.src + ".orders", Sink: "reads", Key: []string{"cust_code", "id"},
			Columns: map[string]string{"cust_code": "cust_code", "id": "id", "amount": "amount"},
		},
	}
	s.openSink(t, "-")
	runShop(t, bed, s)

	src, sink := "`"+s.src+"`.", "`"+s.shards[0]+"`."
	wantCopy, convergeCopy := queriesConverge(t, bed, "the source's customers",
		"SELECT HEX(code), name FROM "+src+"customers ORDER BY 1",
		"SELECT HEX(code), name FROM "+sink+"customer_copy ORDER BY 1")
	_, convergeJoin := queriesConverge(t, bed, "the SQL join",
		"SELECT o.id, HEX(o.cust_code), o.amount, c.name FROM "+src+"orders o LEFT JOIN "+src+"customers c ON c.code = o.cust_code ORDER BY 1",
		"SELECT id, HEX(cust_code), amount, customer FROM "+sink+"orders_named ORDER BY 1")
	wantMoved, convergeMoved := queriesConverge(t, bed, "the source's orders",
		"SELECT HEX(cust_code), id, amount FROM "+src+"orders ORDER BY 2",
		"SELECT HEX(cust_code), id, amount FROM "+sink+"orders_by_code ORDER BY 2")
	converge := func(step string) {
		convergeCopy(step)
		convergeJoin(step)
		convergeMoved(step)
	}

	// Enough rows that the delete and the create of some key land in
	// either order, in one batch and across partitions.
	codes := []string{"ab", "cd", "éf", "gh", "ij", "kl", "mn", "op", "qr", "st", "uv", "wx"}
	for i, c := range codes {
		s.exec(t, "INSERT INTO $.customers VALUES (?, ?)", c, "name "+c)
		s.exec(t, "INSERT INTO $.orders VALUES (?, ?, ?), (?, ?, ?)", 2*i, strings.ToUpper(c), i, 2*i+1, c+" ", i)
	}
	converge("inserted; orders spell their customers' codes otherwise")
	// Each customer's key changes spelling: upper case, then a trailing
	// space, then back; the orders' read keys move to other spellings.
	spellings := []struct {
		customer func(string) string
		order    string // of cust_code
	}{
		{strings.ToUpper, "CONCAT(LOWER(TRIM(cust_code)), ' ')"},
		{func(c string) string { return c + " " }, "LOWER(TRIM(cust_code))"},
		{func(c string) string { return c }, "UPPER(TRIM(cust_code))"},
	}
	for _, sp := range spellings {
		for _, c := range codes {
			s.exec(t, "UPDATE $.customers SET code = ? WHERE code = ?", sp.customer(c), c)
		}
		s.exec(t, "UPDATE $.orders SET cust_code = "+sp.order+", amount = amount + 1")
		converge("keys spelled otherwise")
	}
	s.exec(t, "UPDATE $.customers SET code = UPPER(code), name = CONCAT(name, '!') WHERE code IN ('ab', 'éf')")
	converge("spelling and a column changed together")
	if w := wantCopy(); !strings.Contains(w, "4142|name ab!") || !strings.Contains(wantMoved(), "4142|") {
		t.Fatalf("the source's rows are not what the test means to check:\n%s", w)
	}
}
