package sinks_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
)

// TestApplyEnumIndexZero: "" for an ENUM without a ” member is index 0
// (docs/events.md), which the sink's strict session refuses with 1265. It
// lands as index 0 (e+0 = 0) beside ordinary rows; a row that also holds
// a value strict mode refuses (too long) is still refused, naming the
// column; and the session stays strict for the rows after it.
func TestApplyEnumIndexZero(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "ez", "id INT PRIMARY KEY, e ENUM('a','b') NOT NULL, v VARCHAR(3)")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "e": "e", "v": "v"})
	up := func(id int, e, v string) projections.Write {
		vals := make([]any, len(p.Columns))
		for i, c := range p.Columns {
			vals[i] = map[string]any{"id": id, "e": e, "v": v}[c.Name]
		}
		return projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Values: projections.ValuesOf(vals...), Version: uint64(10 + id)}
	}
	apply := func(ws ...projections.Write) error {
		var stale atomic.Int64
		return sink.Apply(ctx, p, &projections.Batch{Writes: ws, Stale: &stale})
	}
	rows := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT id, e+0, HEX(e), v FROM `"+sinkDB+"`.t_copy ORDER BY id")
	}
	if err := apply(up(1, "", "x"), up(2, "a", "y"), up(3, "", "z")); err != nil {
		t.Fatalf("a batch with ENUM index 0: %v", err)
	}
	// An update to and from index 0 (the ON DUPLICATE KEY UPDATE half).
	w4, w3 := up(2, "", "y2"), up(3, "b", "z2")
	w4.Version, w3.Version = 20, 20
	if err := apply(w4, w3); err != nil {
		t.Fatalf("updates to and from ENUM index 0: %v", err)
	}
	if got, want := rows(), "1|0||x|\n2|0||y2|\n3|2|62|z2|\n"; got != want {
		t.Fatalf("read table:\n%swant:\n%s", got, want)
	}
	err := apply(up(4, "", "long"))
	if err == nil || !strings.Contains(err.Error(), "column 'v'") {
		t.Fatalf("a row with index 0 and a value too long for v: %v; want it refused naming column 'v'", err)
	}
	if err := apply(up(5, "a", "long")); err == nil {
		t.Fatal("a value too long after an index-0 row was stored: the session lost its strict sql_mode")
	}
	if got, want := rows(), "1|0||x|\n2|0||y2|\n3|2|62|z2|\n"; got != want {
		t.Fatalf("read table after the refused rows:\n%swant:\n%s", got, want)
	}
}
