package verify

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/expr"
	"github.com/readside/readside/projections"
)

func mustExpr(t *testing.T, text string) *expr.Expr {
	t.Helper()
	e, err := expr.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestAggregateSQL: each aggregate function is its definition in MySQL
// text over the source row (design: count_if is COUNT(CASE …), sum_if
// SUM(CASE …)), so the source computes the expectation itself.
func TestAggregateSQL(t *testing.T) {
	for _, c := range []struct {
		why  string
		a    projections.Aggregate
		want string
	}{
		{"count(*) counts rows", projections.Aggregate{Func: projections.AggCount}, "COUNT(*)"},
		{"count(e) counts non-NULL values", projections.Aggregate{Func: projections.AggCount, Arg: mustExpr(t, "paid_at")}, "COUNT(s.`paid_at`)"},
		{"sum over an expression", projections.Aggregate{Func: projections.AggSum, Arg: mustExpr(t, "total_cents * 2")}, "SUM((s.`total_cents` * 2))"},
		{"min", projections.Aggregate{Func: projections.AggMin, Arg: mustExpr(t, "created_at")}, "MIN(s.`created_at`)"},
		{"max", projections.Aggregate{Func: projections.AggMax, Arg: mustExpr(t, "created_at")}, "MAX(s.`created_at`)"},
		{"avg is the server's AVG, not sum/count in Go", projections.Aggregate{Func: projections.AggAvg, Arg: mustExpr(t, "total_cents")}, "AVG(s.`total_cents`)"},
		{"count_if counts rows whose condition is TRUE (NULL is not)", projections.Aggregate{Func: projections.AggCountIf, Cond: mustExpr(t, "status = 'paid'")},
			"COUNT(CASE WHEN ((s.`status` = 'paid')) THEN 1 END)"},
		{"sum_if sums the value of rows whose condition is TRUE", projections.Aggregate{Func: projections.AggSumIf, Cond: mustExpr(t, "status = 'paid'"), Arg: mustExpr(t, "total_cents")},
			"SUM(CASE WHEN ((s.`status` = 'paid')) THEN s.`total_cents` END)"},
	} {
		if got := aggregateSQL(c.a); got != c.want {
			t.Errorf("%s: got %s, want %s", c.why, got, c.want)
		}
	}
}

// TestAggregatePlan: an aggregate projection's source side is the GROUP
// BY of the filtered source rows, as a derived table whose columns are the
// read columns, and its keys are the group columns on both sides.
func TestAggregatePlan(t *testing.T) {
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.orders"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "x"}}
	cfg.Projections = map[string]config.Projection{"stats": {From: "shop.orders", Sink: "reads", Key: []string{"customer_id", "day"},
		Columns: map[string]string{"customer_id": "customer_id", "day": "DATE(created_at)"}, Where: "status <> 'draft'"}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	// The group columns as the aggregate compile leaves them: the key.
	p.Aggregation = &projections.Aggregation{GroupBy: []string{"customer_id", "day"}, Aggregates: []projections.Aggregate{
		{Column: "orders", Func: projections.AggCount}, {Column: "total", Func: projections.AggSum, Arg: mustExpr(t, "total_cents")}}}
	pl := newPlan(p, nil)
	want := "(SELECT s.`customer_id` AS `customer_id`, DATE(s.`created_at`) AS `day`, COUNT(*) AS `orders`, SUM(s.`total_cents`) AS `total` " +
		"FROM `shop`.`orders` s WHERE ((s.`status` <> 'draft')) GROUP BY 1, 2) s"
	for _, filtered := range []bool{false, true} {
		if got := pl.sourceFrom(filtered, true); got != want {
			t.Errorf("sourceFrom(%v):\n got %s\nwant %s", filtered, got, want)
		}
	}
	if pl.whereSQL != "" {
		t.Errorf("the filter is inside the groups, not applied to them again: %q", pl.whereSQL)
	}
	if got := strings.Join(pl.srcExprs(), ", "); got != "s.`customer_id`, s.`day`, s.`orders`, s.`total`" {
		t.Errorf("source columns: %s", got)
	}
	if got := strings.Join(pl.readExprs(), ", "); got != "`customer_id`, `day`, `orders`, `total`" {
		t.Errorf("read columns: %s", got)
	}
	if got := strings.Join(pl.srcKey, ", "); got != "s.`customer_id`, s.`day`" {
		t.Errorf("source key: %s", got)
	}
}

// TestChildrenSQL: a children entry is compared as the JSON array and the
// count the source computes per parent row, ordered by order_by then the
// child's primary key (ties), capped by limit.
func TestChildrenSQL(t *testing.T) {
	entry := func(limit int) *projections.Children {
		return &projections.Children{Name: "lines", CountColumn: "lines_count", SourceDB: "shop", SourceTbl: "order_lines",
			On:      []projections.ChildOn{{Child: "order_id", Parent: "id"}},
			Columns: []projections.Column{{Name: "sku", Source: "sku"}, {Name: "it's", Source: "qty"}},
			OrderBy: []string{"line_no"}, Limit: limit}
	}
	c := entry(100)
	for _, tc := range []struct {
		why  string
		got  string
		want string
	}{
		{"array: members by their read names (quoted as literals), ties by the primary key, capped", childArraySQL(0, c, []string{"order_id", "line_id"}),
			"(SELECT JSON_ARRAYAGG(JSON_OBJECT('sku', ch0.`sku`, 'it''s', ch0.`qty`) ORDER BY ch0.`line_no`, ch0.`order_id`, ch0.`line_id` LIMIT 100) " +
				"FROM `shop`.`order_lines` ch0 WHERE ch0.`order_id` = s.`id`)"},
		{"count: every child, not capped", childCountSQL(0, c), "(SELECT COUNT(*) FROM `shop`.`order_lines` ch0 WHERE ch0.`order_id` = s.`id`)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.why, tc.got, tc.want)
		}
	}
	if got := childArraySQL(1, entry(0), []string{"id"}); strings.Contains(got, "LIMIT") || !strings.Contains(got, " ch1 ") {
		t.Errorf("no limit, second entry: %s", got)
	}
}

// TestMemberKeyValues: a contribution's stored record key reads as the
// source key's cells, in readside's envelope and in Debezium's with the
// JSON converter's schema block (kafka.format debezium), where only
// integers and strings are spelled as the source prints them.
func TestMemberKeyValues(t *testing.T) {
	pk := &sourcePK{cols: []string{"id", "code"}, kinds: []kind{kInt, kText}}
	for _, c := range []struct {
		key  string
		want string // "" for unreadable
	}{
		{`{"id":12,"code":"ä"}`, "12|ä"},
		{`{"schema":{"type":"struct","fields":[{"type":"int32","field":"id"},{"type":"string","field":"code"}],"name":"p.db.t.Key"},"payload":{"id":12,"code":"ä"}}`, "12|ä"},
		{`{"schema":{},"payload":{"id":"not a number at all"}}`, ""},
		{`not json`, ""},
	} {
		vals, ok := pk.values([]byte(c.key))
		got := strings.Join(vals, "|")
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("key %s: %q, want %q", c.key, got, c.want)
		}
	}
	dec := &sourcePK{cols: []string{"d"}, kinds: []kind{kDecimal}}
	if _, ok := dec.values([]byte(`{"schema":{},"payload":{"d":"AeJA"}}`)); ok {
		t.Error("a Debezium key's DECIMAL (bytes) read as the source's cell")
	}
}
