package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/internal/sqlflavor/recorded"
)

// TestReplicaLagRecorded reads the source's replica lag (--max-source-lag)
// from each release's recorded answer: the statement and lag column the
// release has (Seconds_Behind_Source in MySQL's SHOW REPLICA STATUS), and
// never a statement it removed.
func TestReplicaLagRecorded(t *testing.T) {
	servers, err := recorded.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range servers {
		t.Run(rs.Name, func(t *testing.T) {
			db, log := recorded.Open(rs)
			defer db.Close()
			lag, ok, err := replicaLag(t.Context(), db)
			if err != nil {
				t.Fatalf("replicaLag: %v", err)
			}
			switch {
			case rs.Expect.LagSeconds == nil && ok:
				t.Errorf("lag %s on a server that is no replica", lag)
			case rs.Expect.LagSeconds != nil && (!ok || lag != time.Duration(*rs.Expect.LagSeconds)*time.Second):
				t.Errorf("lag %s (replica %v), want %ds", lag, ok, *rs.Expect.LagSeconds)
			}
			for _, stmt := range log.Statements() {
				for _, removed := range rs.Removed {
					if strings.EqualFold(stmt, removed) {
						t.Errorf("sent %q, which %s removed", stmt, rs.Version)
					}
				}
			}
		})
	}
}
