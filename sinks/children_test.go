package sinks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// TestChildrenSinkFlavor: children need MariaDB's ordered, capped
// JSON_ARRAYAGG; on a MySQL sink the projection is refused with the fix,
// and a projection without children is not.
func TestChildrenSinkFlavor(t *testing.T) {
	p := goldenChildren(t)
	if err := childrenSink(p, true); err != nil {
		t.Errorf("children on MariaDB: %v", err)
	}
	err := childrenSink(p, false)
	if err == nil || !strings.Contains(err.Error(), "projection orders_with_lines nests children (lines), which need a MariaDB sink: MySQL's JSON_ARRAYAGG cannot order or cap the array") {
		t.Errorf("children on MySQL: %v", err)
	}
	if err := childrenSink(goldenProjections(t)["orders"], false); err != nil {
		t.Errorf("no children on MySQL: %v", err)
	}
}

// goldenChildren is orders with their lines nested, the child table's key
// set as SourceColumns sets it.
func goldenChildren(t *testing.T) *projections.Projection {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.orders", "shop.order_lines"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"orders_with_lines": {
		From: "shop.orders", Sink: "reads", Key: []string{"customer_id", "id"},
		Columns: map[string]string{"id": "id", "customer_id": "customer_id"},
		Children: map[string]config.Children{"lines": {From: "shop.order_lines", On: map[string]string{"order_id": "id"},
			Columns: map[string]string{"sku": "sku", "qty": "qty"}, OrderBy: []string{"line_no"}, Limit: 100}},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps[0].Children[0].SetSourceKey([]string{"id"})
	return ps[0]
}

// childStatementList is the children statements of st, multi-row ones
// for two rows.
func childStatementList(st *statements) []namedStatement {
	var list []namedStatement
	for i, c := range st.children {
		pre := "children " + st.p.Children[i].Name + ": "
		list = append(list,
			namedStatement{pre + "stored links (locking the state rows)", c.oldLinks.text(2)},
			namedStatement{pre + "lock links", c.lock.text(2)},
			namedStatement{pre + "lock every link (truncation)", c.lockAll},
			namedStatement{pre + "child state (version guard)", c.state.text(2)},
			namedStatement{pre + "truncate state", c.truncateState},
			namedStatement{pre + "refresh", c.refresh.text(2)},
			namedStatement{pre + "refresh every row (truncation)", c.refreshAll},
		)
	}
	return list
}

// TestChildStatementsGolden: the exact SQL of a projection with children
// on MariaDB (the only sink children run on), its own statements and its
// children's, is testdata/statements/orders_with_lines.mariadb.sql; the
// DDL of its read, state and link tables is testdata/ddl/orders_with_lines.sql
// (-update rewrites both).
func TestChildStatementsGolden(t *testing.T) {
	p := goldenChildren(t)
	st := newStatements(p, mariaDB)
	checkGolden(t, filepath.Join("testdata", "statements", "orders_with_lines.mariadb.sql"), goldenText(append(statementList(st), childStatementList(st)...)))
	types := projections.Types{
		Read: map[string]string{"customer_id": "int(11) NOT NULL", "id": "int(11) NOT NULL"},
		Children: []projections.ChildTypes{{
			State: map[string]string{"order_id": "int(11) NULL", "line_no": "smallint(6) NULL", "id": "int(11) NULL", "qty": "int(11) NULL",
				"sku": "varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL"},
			Link: map[string]string{"order_id": "int(11) NOT NULL"},
			JSON: map[string]bool{"qty": true},
		}},
	}
	checkGolden(t, filepath.Join("testdata", "ddl", "orders_with_lines.sql"), strings.Join(DDL(p, types)[len(bookkeeping):], ";\n\n")+";\n")
}

// TestHalveChildWrites: a batch too large for max_allowed_packet is
// applied in halves; child state changes split like the rest, never
// lost or applied twice, and the offsets go with the last half.
func TestHalveChildWrites(t *testing.T) {
	cw := func(n int) []projections.ChildWrite { return make([]projections.ChildWrite, n) }
	offs := event.Offsets{"t": {0: 9}}
	cases := []struct {
		why                     string
		b                       projections.Batch
		firstChild, secondChild int
		firstRest, secondRest   int // writes and parents
	}{
		{"child writes alone split in two", projections.Batch{ChildWrites: cw(5)}, 2, 3, 0, 0},
		{"child writes go first, alone, beside other writes", projections.Batch{ChildWrites: cw(3), Writes: make([]projections.Write, 4)}, 3, 0, 0, 4},
		{"without child writes as before", projections.Batch{Writes: make([]projections.Write, 4)}, 0, 0, 2, 2},
	}
	for _, tc := range cases {
		tc.b.Offsets = offs
		first, second := halve(&tc.b)
		if len(first.ChildWrites) != tc.firstChild || len(second.ChildWrites) != tc.secondChild ||
			len(first.Writes)+len(first.Parents) != tc.firstRest || len(second.Writes)+len(second.Parents) != tc.secondRest {
			t.Errorf("%s: child writes %d+%d, others %d+%d", tc.why, len(first.ChildWrites), len(second.ChildWrites),
				len(first.Writes)+len(first.Parents), len(second.Writes)+len(second.Parents))
		}
		if first.Offsets != nil || second.Offsets == nil {
			t.Errorf("%s: the offsets must go with the second half only", tc.why)
		}
	}
}

// TestChildLinkIndexStopsAtUnindexable: the state table's link index
// follows the array's order only as far as its columns can be key parts.
// A child keyed by a prefix of a TEXT column (PRIMARY KEY (url(100)))
// and an order_by over a column that takes the key past 3072 bytes end
// it there; MariaDB refused the whole CREATE TABLE otherwise.
func TestChildLinkIndexStopsAtUnindexable(t *testing.T) {
	for _, c := range []struct {
		why, label, want string
	}{
		{"a TEXT child key", "varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL", "KEY `_rs_link` (`c_order_id`, `c_line_no`, `c_label`)"},
		{"an order_by wider than the index holds", "varchar(1000) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL", "KEY `_rs_link` (`c_order_id`, `c_line_no`)"},
	} {
		p := goldenChildren(t)
		ch := p.Children[0]
		ch.OrderBy = []string{"line_no", "label"}
		ch.SetSourceKey([]string{"url"})
		types := projections.Types{
			Read: map[string]string{"customer_id": "int(11) NOT NULL", "id": "int(11) NOT NULL"},
			Children: []projections.ChildTypes{{
				State: map[string]string{"order_id": "int(11) NULL", "line_no": "smallint(6) NULL", "label": c.label,
					"url": "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL", "qty": "int(11) NULL",
					"sku": "varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL"},
				Link: map[string]string{"order_id": "int(11) NOT NULL"},
			}},
		}
		ddl := strings.Join(childDDL(p, 0, types), "\n")
		if !strings.Contains(ddl, c.want+"\n") {
			t.Errorf("%s: the state table's link index is not %s:\n%s", c.why, c.want, ddl)
		}
	}
}
