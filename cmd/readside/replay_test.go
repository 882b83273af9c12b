package main

import (
	"strings"
	"testing"
)

// TestReplayFlagsCheck: the flag combinations replay refuses before it
// reads the config, each naming what to give instead.
func TestReplayFlagsCheck(t *testing.T) {
	cases := []struct {
		why  string
		f    replayFlags
		want string // "": accepted
	}{
		{"no projection: which one is required", replayFlags{rebuild: true}, "--projection is required"},
		{"a projection and nothing to do: the choices are listed", replayFlags{name: "p"}, "give --from earliest|RFC3339|partition:offset,..., or --rebuild"},
		{"--backfill acts alone", replayFlags{name: "p", backfill: "c", dropOld: true}, "--backfill fills columns into the existing rows on its own"},
		{"--cancel with a new request is ambiguous", replayFlags{name: "p", cancel: true, from: "earliest"}, "--cancel and --pending act on the pending requests only"},
		{"--pending with a rebuild is ambiguous", replayFlags{name: "p", pending: true, rebuild: true}, "--cancel and --pending act on the pending requests only"},
		{"a rebuild has no starting point", replayFlags{name: "p", rebuild: true, from: "earliest"}, "--rebuild always reads the topics from the earliest offset: drop --from"},
		{"a rebuild that drops the old table when done", replayFlags{name: "p", rebuild: true, dropOld: true}, ""},
		{"--drop-old alone", replayFlags{name: "p", dropOld: true}, ""},
		{"a reset", replayFlags{name: "p", from: "0:5"}, ""},
		{"a backfill", replayFlags{name: "p", backfill: "a,b"}, ""},
	}
	for _, c := range cases {
		got := c.f.check()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.why, got, c.want)
		}
	}
}
