package projector

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/readside/readside/projections"
)

var errRejected = errors.New("rejected")

// TestBisectRejected: the bisection of a rejected batch finds exactly the
// rejected changes of every kind and applies every other change once in
// some part, so a batch of an aggregate projection or one with children
// loses nothing on its way to the dead-letter topic.
func TestBisectRejected(t *testing.T) {
	rec := func(o int64) *projections.Record { return &projections.Record{Offset: o} }
	mixed := &projections.Batch{
		Writes:        []projections.Write{{From: rec(1)}, {From: rec(2)}},
		Parents:       []projections.ParentWrite{{From: rec(3)}},
		Contributions: []projections.Contribution{{From: rec(4)}, {From: rec(5)}, {From: rec(6)}},
		ChildWrites:   []projections.ChildWrite{{From: rec(7)}, {From: rec(8)}},
	}
	for _, c := range []struct {
		why string
		b   *projections.Batch
		bad []int64
	}{
		{"a rejected contribution among contributions is found, the others applied", mixed, []int64{5}},
		{"a rejected child write is found among child writes", mixed, []int64{8}},
		{"one rejected change of each kind: each is found", mixed, []int64{1, 3, 4, 7}},
		{"every change rejected: every one is dead-lettered", mixed, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"contributions only, as an aggregate projection's batch is", &projections.Batch{Contributions: []projections.Contribution{{From: rec(1)}, {From: rec(2)}, {From: rec(3)}}}, []int64{3}},
		{"a batch of only offsets applies nothing and finds nothing", &projections.Batch{}, nil},
	} {
		t.Run(c.why, func(t *testing.T) {
			applied := map[int64]int{}
			apply := func(part *projections.Batch) error {
				var offs []int64
				for _, w := range part.Writes {
					offs = append(offs, w.From.Offset)
				}
				for _, w := range part.Parents {
					offs = append(offs, w.From.Offset)
				}
				for _, w := range part.Contributions {
					offs = append(offs, w.From.Offset)
				}
				for _, w := range part.ChildWrites {
					offs = append(offs, w.From.Offset)
				}
				for _, o := range offs {
					if slices.Contains(c.bad, o) {
						return errRejected
					}
				}
				for _, o := range offs {
					applied[o]++
				}
				return nil
			}
			bad, err := bisectRejected(context.Background(), apply, func(err error) bool { return errors.Is(err, errRejected) }, c.b)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range bad {
				got = append(got, r.Record.Offset)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.bad) {
				t.Errorf("dead-lettered %v, want %v", got, c.bad)
			}
			for o := int64(1); o <= int64(c.b.Size()); o++ {
				if want := 1; !slices.Contains(c.bad, o) && applied[o] != want {
					t.Errorf("change at offset %d applied %d times, want %d", o, applied[o], want)
				}
			}
		})
	}
}

// TestBisectRejectedStopsOnOtherErrors: an error that is not a rejection
// (the sink is down) ends the bisection with that error.
func TestBisectRejectedStopsOnOtherErrors(t *testing.T) {
	down := errors.New("sink down")
	b := &projections.Batch{Contributions: []projections.Contribution{{From: &projections.Record{}}, {From: &projections.Record{}}}}
	_, err := bisectRejected(context.Background(), func(*projections.Batch) error { return down }, func(err error) bool { return errors.Is(err, errRejected) }, b)
	if !errors.Is(err, down) {
		t.Fatalf("got %v, want the sink's error", err)
	}
}

// TestBatchDescribe: an error about a batch counts what it holds, so an
// aggregate projection's does not read "0 writes".
func TestBatchDescribe(t *testing.T) {
	for _, c := range []struct {
		why  string
		b    *projections.Batch
		want string
	}{
		{"a plain batch keeps its words", &projections.Batch{Writes: make([]projections.Write, 2), Parents: make([]projections.ParentWrite, 1)}, "2 writes and 1 parent changes"},
		{"an aggregate projection's batch counts its contributions", &projections.Batch{Contributions: make([]projections.Contribution, 5)}, "0 writes and 0 parent changes, 5 contributions"},
		{"child changes beside the parent's writes", &projections.Batch{Writes: make([]projections.Write, 1), ChildWrites: make([]projections.ChildWrite, 3)}, "1 writes and 0 parent changes, 3 child changes"},
	} {
		if got := c.b.Describe(); got != c.want {
			t.Errorf("%s: %q, want %q", c.why, got, c.want)
		}
	}
}
