package sinks

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/projections"
)

// TestRetriedWarnsWhenTheSinkFails: a batch retried because the sink
// failed (a lost connection, a lock wait timeout) is logged; one retried
// after a deadlock or a contention, which concurrent batches meet in
// normal operation, is not.
func TestRetriedWarnsWhenTheSinkFails(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		warn bool
	}{
		{"connection lost", &driver.MySQLError{Number: 2013, Message: "Lost connection to server during query"}, true},
		{"lock wait timeout", &driver.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, true},
		{"deadlock", &driver.MySQLError{Number: 1213, Message: "Deadlock found"}, false},
		{"contention", contention{&driver.MySQLError{Number: 1062, Message: "Duplicate entry"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			s := &MySQL{Log: slog.New(slog.NewTextHandler(&out, nil))}
			failures := 1
			err := s.retried(context.Background(), &projections.Projection{Name: "p"}, &projections.Batch{},
				func(context.Context, *projections.Projection, *projections.Batch) error {
					if failures > 0 {
						failures--
						return c.err
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(out.String(), "sink batch failed; retrying"); warned != c.warn {
				t.Errorf("warned %v, want %v; log: %q", warned, c.warn, out.String())
			}
		})
	}
}
