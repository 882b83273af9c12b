package projector

import (
	"context"

	"github.com/readside/readside/projections"
)

// isolate finds the changes the sink rejects by applying the batch in
// parts (without offsets: a part applied twice is harmless, every change
// being version-guarded), dead-letters the record of each single rejected
// change, then commits the offsets alone. Every kind of change is
// bisected — read rows, parent state, aggregate contributions, child
// state — so none is dropped on the way to the one the sink rejects.
func (pr *Projector) isolate(ctx context.Context, b *projections.Batch) error {
	apply := func(part *projections.Batch) error { return pr.sink.Apply(ctx, pr.p, part) }
	bad, err := bisectRejected(ctx, apply, pr.o.Rejected, b)
	for _, r := range bad {
		b.Rejected++
		if derr := pr.deadLetter(ctx, []projections.Rejected{r}); derr != nil {
			return derr
		}
	}
	if err != nil {
		return err
	}
	return pr.sink.Apply(ctx, pr.p, &projections.Batch{Offsets: b.Offsets, Marks: b.Marks})
}

// bisectRejected applies b's changes through apply in ever smaller parts
// until each part is applied or is one change the sink rejects; it
// returns those, in batch order. An error that is not a rejection ends it.
func bisectRejected(ctx context.Context, apply func(*projections.Batch) error, rejected func(error) bool, b *projections.Batch) ([]projections.Rejected, error) {
	var bad []projections.Rejected
	var bisect func(part *projections.Batch) error
	bisect = func(part *projections.Batch) error {
		err := apply(part)
		if err == nil || !rejected(err) || ctx.Err() != nil {
			return err
		}
		if rec, ok := part.Single(); ok {
			bad = append(bad, projections.Rejected{Record: rec, Reason: err})
			return nil
		}
		lo, hi := part.Halves()
		if err := bisect(lo); err != nil {
			return err
		}
		return bisect(hi)
	}
	whole := &projections.Batch{Writes: b.Writes, Parents: b.Parents, Contributions: b.Contributions, ChildWrites: b.ChildWrites}
	if whole.Size() == 0 {
		return nil, nil
	}
	return bad, bisect(whole)
}
