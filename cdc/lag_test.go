package cdc

import (
	"testing"
	"time"
)

func TestSourceLag(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	hb := 2 * time.Second
	var none time.Time
	cases := []struct {
		why                         string
		now, caughtUp, pub, started time.Time
		want                        float64
	}{
		{"idle: a heartbeat one period ago proves the tailer caught up", t0.Add(2 * time.Second), t0, none, t0.Add(-time.Hour), 0},
		{"a heartbeat late by a period and a second still counts", t0.Add(5 * time.Second), t0, none, t0.Add(-time.Hour), 0},
		{"no heartbeat for longer than the window: the lag runs from the last one", t0.Add(20 * time.Second), t0, none, t0.Add(-time.Hour), 20},
		{"busy (no heartbeats): the newest published commit time counts", t0.Add(30 * time.Second), t0, t0.Add(29 * time.Second), t0.Add(-time.Hour), 1},
		{"stuck publishing: the lag grows from the newest published commit", t0.Add(90 * time.Second), t0, t0.Add(30 * time.Second), t0.Add(-time.Hour), 60},
		{"a backlog from before the start: the old commit time counts, not the start", t0.Add(time.Hour), none, t0, t0.Add(59 * time.Minute), 3600},
		{"never connected: the lag runs from the tailer's start", t0.Add(15 * time.Second), none, none, t0, 15},
		{"not started: nothing to say", t0, none, none, none, 0},
		{"a commit time ahead of the local clock is not negative lag", t0, none, t0.Add(3 * time.Second), t0, 0},
	}
	for _, c := range cases {
		if got := sourceLag(c.now, c.caughtUp, c.pub, c.started, hb); got != c.want {
			t.Errorf("%s: sourceLag = %v, want %v", c.why, got, c.want)
		}
	}
}
