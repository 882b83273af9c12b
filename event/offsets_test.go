package event

import (
	"reflect"
	"testing"
)

// TestOffsetsMin: resuming over several shards (sinks.LowestOffsets) or
// fills starts each partition where the furthest-behind one stands.
func TestOffsetsMin(t *testing.T) {
	for _, c := range []struct {
		why  string
		a, b Offsets
		want Offsets
	}{
		{"the lower next offset wins, whichever side holds it",
			Offsets{"t": {0: 10, 1: 5}}, Offsets{"t": {0: 7, 1: 9}},
			Offsets{"t": {0: 7, 1: 5}}},
		{"a partition one shard never committed is read from the beginning: it is left out",
			Offsets{"t": {0: 10, 1: 5}}, Offsets{"t": {0: 10}},
			Offsets{"t": {0: 10}}},
		{"a topic one shard never committed is left out too",
			Offsets{"t": {0: 1}, "u": {0: 2}}, Offsets{"u": {0: 3}},
			Offsets{"u": {0: 2}}},
		{"a shard with no offsets at all sends every partition back to the beginning",
			Offsets{"t": {0: 1}}, Offsets{},
			Offsets{}},
	} {
		if got := c.a.Min(c.b); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.why, got, c.want)
		}
	}
}
