package reshard

import (
	"context"
	"fmt"
	"time"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/rebuild"
)

// filler runs the fill projector: the projection under the fill identity
// applying through the fill sink, from the fill identity's offsets on the
// NEW shards (none: the earliest). It runs from the fill (topics) or the
// end of the copy until the cutover has what it needs.
type filler struct {
	r      *Reshard
	sink   *fillSink
	pr     *projector.Projector
	cancel context.CancelFunc
	done   chan error
}

func (r *Reshard) newFiller() *filler {
	return &filler{r: r, sink: newFillSink(r.o.New, r.pieces)}
}

// start starts the projector unless it runs (or there is nothing to fill).
func (f *filler) start(ctx context.Context) error {
	if f.pr != nil || len(f.sink.shards) == 0 {
		return nil
	}
	po := f.r.o.Projector
	po.Log = f.r.o.ProjectorLog()
	pr, err := projector.New(f.r.fill, f.sink, po)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	f.pr, f.cancel, f.done = pr, cancel, make(chan error, 1)
	go func() { f.done <- pr.Run(pctx) }()
	return nil
}

// stop stops the projector after its last batch (a no-op when none runs).
func (f *filler) stop() error {
	if f.pr == nil {
		return nil
	}
	f.cancel()
	err := <-f.done
	f.pr = nil
	return err
}

// waitFor waits until the projector has applied everything before target
// on every partition (caughtUp), drawing what's progress.
func (f *filler) waitFor(ctx context.Context, target event.Offsets, what string) error {
	if len(f.sink.shards) == 0 {
		return nil
	}
	if err := f.start(ctx); err != nil {
		return err
	}
	for {
		stored := make([]event.Offsets, len(f.sink.shards))
		for i, sh := range f.sink.shards {
			o, err := sh.Offsets(ctx, f.r.fill)
			if err != nil {
				return err
			}
			stored[i] = o
		}
		n, total, ok := rebuild.CaughtUp(stored, f.pr.Applied(), target)
		f.r.o.Progress.Count(what, n, total, "offsets", ok)
		if ok {
			return nil
		}
		select {
		case err := <-f.done:
			f.pr = nil
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("%s: the fill projector stopped: %w", what, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
