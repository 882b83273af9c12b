package sinks

import (
	"reflect"
	"testing"

	"github.com/readside/readside/projections"
)

// TestMinOffsets: resuming over several shards (LowestOffsets) starts
// each partition where the furthest-behind shard stands.
func TestMinOffsets(t *testing.T) {
	for _, c := range []struct {
		why  string
		a, b projections.Offsets
		want projections.Offsets
	}{
		{"the lower next offset wins, whichever side holds it",
			projections.Offsets{"t": {0: 10, 1: 5}}, projections.Offsets{"t": {0: 7, 1: 9}},
			projections.Offsets{"t": {0: 7, 1: 5}}},
		{"a partition one shard never committed is read from the beginning: it is left out",
			projections.Offsets{"t": {0: 10, 1: 5}}, projections.Offsets{"t": {0: 10}},
			projections.Offsets{"t": {0: 10}}},
		{"a topic one shard never committed is left out too",
			projections.Offsets{"t": {0: 1}, "u": {0: 2}}, projections.Offsets{"u": {0: 3}},
			projections.Offsets{"u": {0: 2}}},
		{"a shard with no offsets at all sends every partition back to the beginning",
			projections.Offsets{"t": {0: 1}}, projections.Offsets{},
			projections.Offsets{}},
	} {
		if got := MinOffsets(c.a, c.b); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.why, got, c.want)
		}
	}
}
