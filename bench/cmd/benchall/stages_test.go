package main

import (
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestEndPosition: a drain waits for the checkpoint covering the bed's
// GTID set, so a set the tailer's checkpoints cannot be compared with must
// fail before the drain, not time it out.
func TestEndPosition(t *testing.T) {
	for _, c := range []struct {
		gtid, why string
		ok        bool
	}{
		{"0-1-42", "one domain, as the test bed writes", true},
		{"0-1-42,1-2-7", "several domains", true},
		{"", "no GTID: nothing to compare a checkpoint with", false},
		{"0-1", "a malformed set would never be contained", false},
	} {
		p, err := endPosition(testbed.BinlogPosition{GTID: c.gtid})
		if (err == nil) != c.ok {
			t.Errorf("%s: endPosition(%q) = %+v, %v; want ok=%v", c.why, c.gtid, p, err, c.ok)
		}
		if c.ok && (p.Flavor != "mariadb" || p.GTID != c.gtid) {
			t.Errorf("%s: endPosition(%q) = %+v", c.why, c.gtid, p)
		}
	}
}
