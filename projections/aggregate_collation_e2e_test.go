package projections_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// TestAggregateCaseInsensitiveGroup: grouped by a utf8mb4_general_ci
// column, 'apple' and 'APPLE' are one group, on the source as on the
// sink. The sink's group row keeps the value it was first written with
// ('apple', the first order), while the source's GROUP BY shows the
// value of the first row it reads ('APPLE  ', the lower id); MIN() of
// 'paid' and 'PAID' shows either. verify matches the group, and compares
// its cells, under the collation and says EQUAL.
func TestAggregateCaseInsensitiveGroup(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	s := newAggShop(t, bed, func(d *config.Projection) {
		d.GroupBy = []string{"note"}
		d.Where = "note IS NOT NULL"
		d.Aggregates = map[string]string{"orders": "count(*)", "total": "sum(amount)", "lowest": "min(status)"}
	})
	runTailer(t, bed, s.cfg)
	defer startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)()
	o := "`" + s.src + "`.orders"
	step := func(query, want string) {
		t.Helper()
		if err := bed.MySQL.Exec(ctx, query); err != nil {
			t.Fatal(err)
		}
		testbed.Eventually(t, time.Minute, func() (bool, string) {
			// The group keeps its first spelling; MIN() of equal strings
			// may show either.
			got := s.actual(t, s.sinkDB)
			return strings.HasPrefix(got, "apple|") && strings.EqualFold(got, want), "read table " + got + ", want " + want
		})
	}
	step("INSERT INTO "+o+" VALUES (2, 1, 'paid', 1.00, 1, NOW(), 'apple')", "apple|paid|1|1.00|\n")
	step("INSERT INTO "+o+" VALUES (1, 1, 'PAID', 2.00, 2, NOW(), 'APPLE  ')", "apple|paid|2|3.00|\n")
	if got := s.expected(t); !strings.HasPrefix(got, "APPLE  |") || !strings.HasSuffix(got, "|2|3.00|\n") {
		t.Fatalf("the source's GROUP BY: %q, want the group shown as 'APPLE  ' with 2 orders", got)
	}
	sink, err := sinks.OpenSharded(ctx, "reads", s.cfg.Sinks["reads"])
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	src, err := verify.OpenSource(s.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rep, err := verify.New(s.p, src, sink, verify.Options{Settle: 3 * time.Second, Log: slog.New(slog.DiscardHandler)}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.Unsettled != 0 {
		var text strings.Builder
		rep.WriteText(&text)
		t.Fatalf("verify of one group under two spellings:\n%s", text.String())
	}
}
