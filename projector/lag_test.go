package projector

import (
	"testing"
	"time"

	"github.com/readside/readside/projections"
)

func TestProjectionLag(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	up := func(v float64) func() float64 { return func() float64 { return v } }
	cases := []struct {
		why      string
		oldest   int64
		upstream func() float64
		want     float64
	}{
		{"idle and caught up, no tailer here: 0 however long it stays idle", 0, nil, 0},
		{"idle and caught up, the tailer caught up too: 0", 0, up(0), 0},
		{"a job waits (sink stuck): the age of its oldest event", 1_700_000_040, up(0), 60},
		{"nothing waits but the tailer cannot publish: its lag", 0, up(42), 42},
		{"both: the larger", 1_700_000_090, up(42), 42},
		{"a commit time ahead of this clock is not negative", 1_700_000_105, nil, 0},
	}
	for _, c := range cases {
		if got := projectionLag(now, c.oldest, c.upstream); got != c.want {
			t.Errorf("%s: projectionLag = %v, want %v", c.why, got, c.want)
		}
	}
}

// TestLagCollectorJobs: jobs count from prepared to committed, in order;
// a new membership forgets jobs of the last one.
func TestLagCollectorJobs(t *testing.T) {
	m := NewMetrics(nil)
	p := &projections.Projection{Name: "p"}
	if _, known := m.LagSeconds("p"); known {
		t.Fatal("a projection no projector started has a lag")
	}
	m.started(p)
	start := time.Now()
	m.waiting(p, start.Add(-50*time.Second).Unix(), start)
	m.waiting(p, start.Add(-10*time.Second).Unix(), start)
	if lag, _ := m.LagSeconds("p"); lag < 50 {
		t.Fatalf("two jobs waiting, the older 50s old: lag %v", lag)
	}
	m.done(p)
	if lag, _ := m.LagSeconds("p"); lag < 10 || lag >= 50 {
		t.Fatalf("the older job committed: lag %v, want the younger's ~10s", lag)
	}
	m.started(p)
	if lag, _ := m.LagSeconds("p"); lag != 0 {
		t.Fatalf("after a new membership: lag %v, want 0", lag)
	}
}

// TestConsistentLag: a consistent commit's cut waits in the projection's
// lag from the commit's start until a commit lands at or past it — one
// rolled back and redone by a later commit too — so the lag of a sink
// whose commits fail grows from the oldest cut it could not apply.
func TestConsistentLag(t *testing.T) {
	m := NewMetrics(nil)
	p := &projections.Projection{Name: "p"}
	m.started(p)
	now := time.Now()
	lag := func() float64 { l, _ := m.lag.seconds("p", now); return l }
	m.waiting(p, now.Unix()-100, now) // a commit that is rolled back
	m.waiting(p, now.Unix()-40, now)  // its redo, to a later cut
	if l := lag(); l < 99 || l > 101 {
		t.Fatalf("lag %v while a rolled-back commit's cut waits, want ~100 s", l)
	}
	m.doneThrough(p, now.Unix()-40) // the redo lands
	if l := lag(); l != 0 {
		t.Fatalf("lag %v once a commit landed past every cut waiting, want 0", l)
	}
}
