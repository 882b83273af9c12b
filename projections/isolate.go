package projections

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// isolate finds the changes the sink rejects by applying the batch in
// parts (without offsets: a part applied twice is harmless, every change
// being version-guarded), dead-letters the record of each single rejected
// change, then commits the offsets alone. Every kind of change is
// bisected — read rows, parent state, aggregate contributions, child
// state — so none is dropped on the way to the one the sink rejects.
func (pr *Projector) isolate(ctx context.Context, b *Batch) error {
	apply := func(part *Batch) error { return pr.sink.Apply(ctx, pr.p, part) }
	bad, err := bisectRejected(ctx, apply, pr.o.Rejected, b)
	for _, r := range bad {
		b.Rejected++
		if derr := pr.deadLetter(ctx, []Rejected{r}); derr != nil {
			return derr
		}
	}
	if err != nil {
		return err
	}
	return pr.sink.Apply(ctx, pr.p, &Batch{Offsets: b.Offsets, Marks: b.Marks})
}

// bisectRejected applies b's changes through apply in ever smaller parts
// until each part is applied or is one change the sink rejects; it
// returns those, in batch order. An error that is not a rejection ends it.
func bisectRejected(ctx context.Context, apply func(*Batch) error, rejected func(error) bool, b *Batch) ([]Rejected, error) {
	var bad []Rejected
	var bisect func(part *Batch) error
	bisect = func(part *Batch) error {
		err := apply(part)
		if err == nil || !rejected(err) || ctx.Err() != nil {
			return err
		}
		if rec, ok := part.single(); ok {
			bad = append(bad, Rejected{Record: rec, Reason: err})
			return nil
		}
		lo, hi := part.halves()
		if err := bisect(lo); err != nil {
			return err
		}
		return bisect(hi)
	}
	whole := &Batch{Writes: b.Writes, Parents: b.Parents, Contributions: b.Contributions, ChildWrites: b.ChildWrites}
	if whole.size() == 0 {
		return nil, nil
	}
	return bad, bisect(whole)
}

func (b *Batch) size() int {
	return len(b.Writes) + len(b.Parents) + len(b.Contributions) + len(b.ChildWrites)
}

// single is the record of b's one change, if it has exactly one.
func (b *Batch) single() (rec *kgo.Record, ok bool) {
	if b.size() != 1 {
		return nil, false
	}
	switch {
	case len(b.Writes) == 1:
		return b.Writes[0].From, true
	case len(b.Parents) == 1:
		return b.Parents[0].From, true
	case len(b.Contributions) == 1:
		return b.Contributions[0].From, true
	default:
		return b.ChildWrites[0].From, true
	}
}

// halves splits a batch of two or more changes: parent state apart from
// the rest first (as the sink applies it first), then each kind apart,
// then one kind's changes in two halves.
func (b *Batch) halves() (lo, hi *Batch) {
	kinds := 0
	for _, n := range []int{len(b.Parents), len(b.Writes), len(b.Contributions), len(b.ChildWrites)} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds > 1 && len(b.Parents) > 0:
		return &Batch{Parents: b.Parents}, &Batch{Writes: b.Writes, Contributions: b.Contributions, ChildWrites: b.ChildWrites}
	case kinds > 1 && len(b.Writes) > 0:
		return &Batch{Writes: b.Writes}, &Batch{Contributions: b.Contributions, ChildWrites: b.ChildWrites}
	case kinds > 1:
		return &Batch{Contributions: b.Contributions}, &Batch{ChildWrites: b.ChildWrites}
	case len(b.Parents) > 0:
		return &Batch{Parents: b.Parents[:len(b.Parents)/2]}, &Batch{Parents: b.Parents[len(b.Parents)/2:]}
	case len(b.Writes) > 0:
		return &Batch{Writes: b.Writes[:len(b.Writes)/2]}, &Batch{Writes: b.Writes[len(b.Writes)/2:]}
	case len(b.Contributions) > 0:
		return &Batch{Contributions: b.Contributions[:len(b.Contributions)/2]}, &Batch{Contributions: b.Contributions[len(b.Contributions)/2:]}
	default:
		return &Batch{ChildWrites: b.ChildWrites[:len(b.ChildWrites)/2]}, &Batch{ChildWrites: b.ChildWrites[len(b.ChildWrites)/2:]}
	}
}

// describe counts b's changes by kind for messages: "3 writes and 1
// parent changes", with contributions and child changes when there are.
func (b *Batch) describe() string {
	s := fmt.Sprintf("%d writes and %d parent changes", len(b.Writes), len(b.Parents))
	if len(b.Contributions) > 0 {
		s += fmt.Sprintf(", %d contributions", len(b.Contributions))
	}
	if len(b.ChildWrites) > 0 {
		s += fmt.Sprintf(", %d child changes", len(b.ChildWrites))
	}
	return s
}
