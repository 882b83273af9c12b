package projector

import (
	"testing"
	"time"

	"github.com/readside/readside/projections"
)

func TestGCIntervalOption(t *testing.T) {
	cases := []struct {
		why  string
		set  time.Duration
		want time.Duration
	}{
		{"unset collects at the default pace, not on every poll", 0, defaultGCInterval},
		{"a set interval is kept as given", 200 * time.Millisecond, 200 * time.Millisecond},
	}
	for _, c := range cases {
		pr, err := New(&projections.Projection{Name: "p", Group: "g", DLQTopic: "d"}, nil, Options{Brokers: []string{"127.0.0.1:9092"}, GCInterval: c.set})
		if err != nil {
			t.Fatal(err)
		}
		if pr.o.GCInterval != c.want {
			t.Errorf("%s: GCInterval %v, want %v", c.why, pr.o.GCInterval, c.want)
		}
	}
}
