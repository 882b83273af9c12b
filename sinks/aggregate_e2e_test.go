package sinks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// aggregateSink declares stats, count(*), sum(amount) and min(amount) of
// src.t per g, and creates its tables.
func aggregateSink(t *testing.T, bed *testbed.Bed, src, sinkDB string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".t"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"stats": {From: src + ".t", Sink: "s", GroupBy: []string{"g"},
		Aggregates: map[string]string{"n": "count(*)", "total": "sum(amount)", "low": "min(amount)"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	types, err := ps[0].SourceColumns(t.Context(), bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(t.Context(), "s", cfg.Sinks["s"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(t.Context(), sinks.DDL(ps[0], types)); err != nil {
		t.Fatal(err)
	}
	return ps[0], sink
}

// contribution is source row key's contribution at version v: to group g
// with amount (the aggregates in read table order: low, n, total), or
// none when g is nil.
func contribution(key string, v uint64, g any, amount any) projections.Contribution {
	c := projections.Contribution{SourceKey: key, Version: v}
	if g != nil {
		c.Group = projections.ValuesOf(g)
		c.Values = projections.ValuesOf(amount, 1, amount)
	}
	return c
}

// TestApplyContributions: the sink's rules for contributions, one at a
// time: new rows add to their group, a late or repeated contribution
// changes nothing (counted as stale), a newer one moves the row between
// groups, a withdrawal of a group's MIN recomputes it, a group left
// without rows disappears, and a truncation withdraws everything older
// than itself but nothing newer.
func TestApplyContributions(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "agg", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	p, sink := aggregateSink(t, bed, src, sinkDB)
	var stale atomic.Int64
	apply := func(cs ...projections.Contribution) {
		t.Helper()
		if err := sink.Apply(ctx, p, &projections.Batch{Contributions: cs, Stale: &stale}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() string {
		return testbed.RowsText(t, sink.Shards[0].DB(), "SELECT g, n, total, low FROM stats ORDER BY g")
	}
	step := func(what, want string) {
		t.Helper()
		if got := rows(); got != want {
			t.Fatalf("%s: %s", what, testbed.FirstDifference(got, want))
		}
	}
	apply(contribution("a", 10, 1, "5.00"), contribution("b", 10, 1, "-2.50"), contribution("c", 10, 2, nil))
	step("three rows in two groups", "1|2|2.50|-2.50|\n2|1|<nil>|<nil>|\n")
	apply(contribution("a", 9, 2, "100.00"), contribution("b", 10, 2, "1.00"))
	step("an older and a repeated version change nothing", "1|2|2.50|-2.50|\n2|1|<nil>|<nil>|\n")
	if stale.Load() != 2 {
		t.Errorf("%d contributions counted stale, want 2", stale.Load())
	}
	apply(contribution("b", 11, 2, "7.25"))
	step("a move withdraws from the old group (its MIN recomputed) and adds to the new one", "1|1|5.00|5.00|\n2|2|7.25|7.25|\n")
	apply(contribution("a", 12, nil, nil))
	step("a group without rows disappears", "2|2|7.25|7.25|\n")
	apply(contribution("a", 11, 1, "1.00"))
	step("a late contribution does not bring a deleted row back", "2|2|7.25|7.25|\n")
	apply(contribution("d", 20, 3, "0.01"), projections.Contribution{Truncate: true, Version: 15}, contribution("e", 14, 3, "9.00"))
	step("a truncation withdraws what is older, keeps what is newer", "3|1|0.01|0.01|\n")
	apply(contribution("b", 13, 2, "3.00"), contribution("f", 16, 2, "4.00"))
	step("after a truncation, older contributions stay out", "2|1|4.00|4.00|\n3|1|0.01|0.01|\n")
}

// TestApplyContributionsShrinkOversizedBatch: a batch of contributions
// too large for the sink's max_allowed_packet is cut into statements that
// fit, and still adds up.
func TestApplyContributionsShrinkOversizedBatch(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "aggbig", "id INT PRIMARY KEY, g INT NOT NULL, amount DECIMAL(8,2)")
	setGlobal(t, bed, "max_allowed_packet", 65536)
	p, sink := aggregateSink(t, bed, src, sinkDB) // connects after the change: learns 64 KiB
	var cs []projections.Contribution
	for i := range 3000 {
		cs = append(cs, contribution(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, strings.Repeat("x", 200)), 100, i%7, "1.25"))
	}
	actx, cancel := context.WithTimeout(ctx, 120*time.Second) // a retry loop must fail the test, not hang it
	defer cancel()
	if err := sink.Apply(actx, p, &projections.Batch{Contributions: cs}); err != nil {
		t.Fatalf("contributions over max_allowed_packet must be cut to fit, got %v", err)
	}
	got := testbed.RowsText(t, sink.Shards[0].DB(), "SELECT SUM(n), SUM(total), COUNT(*) FROM stats")
	if want := "3000|3750.00|7|\n"; got != want {
		t.Fatalf("after the shrunk batch: %q, want %q", got, want)
	}
}
