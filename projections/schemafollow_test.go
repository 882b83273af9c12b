package projections

import (
	"fmt"
	"strings"
	"testing"
)

func TestDroppedColumn(t *testing.T) {
	p := &Projection{Name: "orders", SourceDB: "shop", SourceTbl: "orders", Topic: "rs.shop.orders",
		Columns: []Column{{Name: "id", Source: "id"}, {Name: "memo", Source: "note"}},
		Joins: []*Join{{N: 1, ParentDB: "shop", ParentTbl: "customers", Topic: "rs.shop.customers",
			On: []JoinOn{{Parent: "id", Child: "customer_id", Read: "customer_id"}}, Columns: []Column{{Name: "customer_name", Source: "name"}}}}}
	cases := []struct {
		why    string
		topic  string
		reason error
		want   []string // "": no StopError
	}{
		{"a mapped source column gone from the source's events names the read column's key, not the source name",
			"rs.shop.orders", &missingColumn{"note"}, []string{"shop.orders.note", "projections.orders.columns.memo", "remove projections.orders.columns.memo", "readside plan --apply"}},
		{"found through the key's wrapping",
			"rs.shop.orders", fmt.Errorf("key column %q: %w", "id", &missingColumn{"id"}), []string{"projections.orders.columns.id"}},
		{"a parent's column names the join's columns entry",
			"rs.shop.customers", &missingColumn{"name"}, []string{"shop.customers.name", "projections.orders.join[0].columns.customer_name"}},
		{"a parent's key column names the join's on",
			"rs.shop.customers", &missingColumn{"id"}, []string{"projections.orders.join[0].on"}},
		{"bad data is for on_error, not a stop", "rs.shop.orders", fmt.Errorf("column %q: not base64", "memo"), nil},
	}
	for _, c := range cases {
		err := p.DroppedColumn(c.topic, c.reason)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: got %v, want none", c.why, err)
			}
			continue
		}
		se, ok := err.(*StopError)
		if !ok {
			t.Errorf("%s: got %v (%T), want a *StopError", c.why, err, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(se.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, se.Error(), w)
			}
		}
	}
}
