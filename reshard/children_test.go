package reshard

import (
	"fmt"
	"testing"

	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestChildLinks: the links whose arrays the refresh after a copy
// rebuilds are the copied rows' values of the entry's on columns, each
// once, matched by name whatever the case, and none of a row with a NULL
// among them (no child points at it).
func TestChildLinks(t *testing.T) {
	ch := &projections.Children{Name: "lines", On: []projections.ChildOn{{Child: "customer_id", Read: "Customer_ID"}, {Child: "order_id", Read: "id"}}}
	for _, tc := range []struct {
		why  string
		cols []string
		rows [][]any
		want string
	}{
		{"each row's link, in the entry's on order, not the table's",
			[]string{"id", "customer_id", "total"}, [][]any{{"1", "7", "9.50"}, {"2", "7", "1.00"}}, "[[7 1] [7 2]]"},
		{"rows sharing a link are refreshed once",
			[]string{"id", "customer_id", "x"}, [][]any{{"1", "7", "a"}, {"1", "7", "b"}}, "[[7 1]]"},
		{"a NULL in the link: the row has no children",
			[]string{"id", "customer_id"}, [][]any{{"1", nil}, {"2", "8"}}, "[[8 2]]"},
		{"binary link values are kept as bytes",
			[]string{"id", "customer_id"}, [][]any{{[]byte{0, 1}, "8"}}, "[[8 [0 1]]]"},
		{"a table without the link's column (not this projection's): nothing",
			[]string{"id"}, [][]any{{"1"}}, "[]"},
	} {
		c := &sinks.Chunk{Columns: tc.cols, Rows: tc.rows}
		if got := fmt.Sprint(childLinks(c, ch)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.why, got, tc.want)
		}
	}
}
