package cdc

import (
	"testing"
	"time"

	"github.com/readside/readside/event"
)

// TestCurrentChange: the change a row image pair of a system-versioned
// table makes to its current rows, for a TIMESTAMP ROW END (both of
// MariaDB's maxima) and a transaction-precise BIGINT UNSIGNED one.
func TestCurrentChange(t *testing.T) {
	tbl := &table{columns: []column{{name: "id"}, {name: "row_end"}}, pk: []int{0, 1}}
	tbl.setRowEnd("row_end")
	if !tbl.versioned || tbl.rowEnd != 1 || len(tbl.pk) != 1 || tbl.pk[0] != 0 {
		t.Fatalf("setRowEnd: versioned %v, rowEnd %d, key %v; want column 1, key [0]", tbl.versioned, tbl.rowEnd, tbl.pk)
	}
	maxTS := time.Unix(2147483647, 999999000)
	for _, c := range []struct {
		name          string
		op            event.Op
		before, after []any
		want          event.Op
		ok            bool
	}{
		{"insert of a current row", event.OpCreate, nil, []any{1, maxTS}, event.OpCreate, true},
		{"insert of a past version (an UPDATE's)", event.OpCreate, nil, []any{1, time.Unix(1796128833, 0)}, 0, false},
		{"update of the current row", event.OpUpdate, []any{1, maxTS}, []any{1, maxTS}, event.OpUpdate, true},
		{"update that closes the row (a DELETE)", event.OpUpdate, []any{1, maxTS}, []any{1, time.Unix(1796128833, 0)}, event.OpDelete, true},
		{"a past version made current", event.OpUpdate, []any{1, time.Unix(1796128833, 0)}, []any{1, time.Unix(4294967295, 999999000)}, event.OpCreate, true},
		{"DELETE HISTORY", event.OpDelete, []any{1, time.Unix(1796128833, 0)}, nil, 0, false},
		{"delete of a current row (transaction-precise)", event.OpDelete, []any{1, int64(-1)}, nil, event.OpDelete, true},
		{"past version (transaction-precise)", event.OpCreate, nil, []any{1, int64(4711)}, 0, false},
		{"current (uint64)", event.OpCreate, nil, []any{1, ^uint64(0)}, event.OpCreate, true},
	} {
		op, _, _, ok := tbl.currentChange(c.op, c.before, c.after)
		if ok != c.ok || ok && op != c.want {
			t.Errorf("%s: op %q ok %v, want %q %v", c.name, op, ok, c.want, c.ok)
		}
	}
	plain := &table{columns: []column{{name: "id"}, {name: "row_end"}}, pk: []int{0}}
	plain.setRowEnd("")
	if op, _, _, ok := plain.currentChange(event.OpCreate, nil, []any{1, time.Unix(5, 0)}); !ok || op != event.OpCreate {
		t.Errorf("a table that is not versioned: op %q ok %v, want every change", op, ok)
	}
}
