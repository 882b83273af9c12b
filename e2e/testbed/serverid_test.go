package testbed

import "testing"

// TestNewServerID: tailers started by one test binary must never share a
// server_id (the source drops the older binlog client of an id), and none
// may take the test bed's own servers' ids.
func TestNewServerID(t *testing.T) {
	seen := map[uint32]bool{}
	for range 1000 {
		id := NewServerID()
		if id <= 100 || seen[id] {
			t.Fatalf("server_id %d: repeated or among the test bed's own (after %d ids)", id, len(seen))
		}
		seen[id] = true
	}
}
