package projector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// orderSink records the order batches are applied in (by the next offset
// of topic "t" partition 0) and fails the batch whose offset is failAt.
type orderSink struct {
	mu      sync.Mutex
	applied []int64
	failAt  int64
	pending event.Offsets // replay requests (ReplaySink)
	// release, when set, holds each Apply until it is closed.
	release chan struct{}
}

var errSinkDown = errors.New("sink down")

func (s *orderSink) Offsets(context.Context, *projections.Projection) (event.Offsets, error) {
	return nil, nil
}
func (s *orderSink) Apply(_ context.Context, _ *projections.Projection, b *projections.Batch) error {
	if s.release != nil {
		<-s.release
	}
	next := b.Offsets["t"][0]
	if next == s.failAt {
		return errSinkDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied = append(s.applied, next)
	return nil
}
func (s *orderSink) PendingReplays(context.Context, *projections.Projection) (event.Offsets, error) {
	return s.pending, nil
}
func (s *orderSink) TakeReplays(context.Context, *projections.Projection, map[string][]int32) (event.Offsets, error) {
	return nil, nil
}

func stageProjector(sink projections.Sink) *Projector {
	return &Projector{p: &projections.Projection{Name: "p", Table: "t"}, sink: sink, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func offsetJob(next int64) *job {
	b := &projections.Batch{Offsets: event.Offsets{}}
	b.Offsets.Set("t", 0, next)
	return &job{parts: []*projections.Batch{b}}
}

func TestApplyStage(t *testing.T) {
	cases := []struct {
		why string
		// jobs are handed over one after another, each one's result
		// taken before the next, as the poll stage does.
		jobs    []int64
		failAt  int64
		applied []int64
		waitErr string // the error wait returns for the failing job ("": none)
		runErr  string // what run ends with ("": nil)
	}{
		{why: "jobs commit one after another in the order they are handed over",
			jobs: []int64{1, 2, 3}, applied: []int64{1, 2, 3}},
		{why: "a failed job is its result, and ends the stage with it",
			jobs: []int64{1, 2}, failAt: 2, applied: []int64{1}, waitErr: "sink down", runErr: "sink down"},
	}
	for _, c := range cases {
		sink := &orderSink{failAt: c.failAt}
		a := newApplyStage(stageProjector(sink))
		ran := make(chan error, 1)
		go func() { ran <- a.run(t.Context()) }()
		var waitErr error
		for _, next := range c.jobs {
			if err := a.submit(t.Context(), offsetJob(next)); err != nil {
				t.Fatalf("%s: submit: %v", c.why, err)
			}
			if err := a.wait(); err != nil {
				waitErr = err
				break
			}
		}
		a.stop()
		runErr := <-ran
		if !slices.Equal(sink.applied, c.applied) {
			t.Errorf("%s: applied %v, want %v", c.why, sink.applied, c.applied)
		}
		for _, got := range []struct {
			what string
			err  error
			want string
		}{{"wait", waitErr, c.waitErr}, {"run", runErr, c.runErr}} {
			if (got.err == nil) != (got.want == "") || got.err != nil && !strings.Contains(got.err.Error(), got.want) {
				t.Errorf("%s: %s returned %v, want %q", c.why, got.what, got.err, got.want)
			}
		}
	}
}

func TestApplyStageStopWithJobInFlight(t *testing.T) {
	// A stop lets the job in flight commit before the stage ends, so
	// whoever acts on "stopped" does not race its commit.
	synctest.Test(t, func(t *testing.T) {
		sink := &orderSink{release: make(chan struct{})}
		a := newApplyStage(stageProjector(sink))
		ran := make(chan error, 1)
		go func() { ran <- a.run(t.Context()) }()
		if err := a.submit(t.Context(), offsetJob(1)); err != nil {
			t.Fatal(err)
		}
		a.stop()
		synctest.Wait() // the stage is either blocked in Apply or has ended
		select {
		case err := <-ran:
			t.Fatalf("the stage ended (%v) with its job still being applied", err)
		default:
		}
		close(sink.release)
		if err := <-ran; err != nil || !slices.Equal(sink.applied, []int64{1}) {
			t.Fatalf("stage ended with %v, applied %v; want nil and [1]", err, sink.applied)
		}
	})
}

func TestAfterGrace(t *testing.T) {
	type key struct{}
	ctx, stop := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
	graced, cut := afterGrace(ctx)
	defer cut()
	stop()
	// A stop leaves the batch in flight its grace: the apply context
	// outlives the membership's for stopGrace.
	if graced.Err() != nil {
		t.Fatalf("graced context cancelled with its parent: %v", graced.Err())
	}
	if graced.Value(key{}) != "v" {
		t.Fatalf("graced context lost its parent's values")
	}
	cut()
	if graced.Err() == nil {
		t.Fatalf("graced context still alive after cut")
	}
}

func TestCheckReplays(t *testing.T) {
	held := newOwned()
	held.add(map[string][]int32{"t": {0}})
	cases := []struct {
		why     string
		pending event.Offsets
		recent  bool // looked for within replayCheckEvery
		want    error
	}{
		{why: "a request for a partition held here ends the membership to rejoin",
			pending: event.Offsets{"t": {0: 5}}, want: errRejoin},
		{why: "a request for a partition held elsewhere is left to its owner",
			pending: event.Offsets{"t": {1: 5}}},
		{why: "no request: the membership goes on"},
		{why: "within the interval the sink is not asked again",
			pending: event.Offsets{"t": {0: 5}}, recent: true},
	}
	for _, c := range cases {
		s := &pollStage{pr: stageProjector(&orderSink{pending: c.pending}), owned: held}
		if c.recent {
			s.lastCheck = time.Now()
		}
		if err := s.checkReplays(t.Context()); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("%s: %v, want %v", c.why, err, c.want)
		}
	}
}

func TestUnmapped(t *testing.T) {
	p := &projections.Projection{Name: "p", Topic: "t", SourceDB: "db", SourceTbl: "t", Columns: []projections.Column{{Name: "id", Source: "id"}}}
	rec := &projections.Record{Topic: "t", Partition: 2, Offset: 7}
	cases := []struct {
		why  string
		bad  []projections.Rejected
		want []string // nil: no error
		stop bool     // a *StopError
		dlq  bool     // under on_error: dlq
	}{
		{why: "nothing unmapped: nothing to do"},
		{why: "bad data under on_error: stop names the record and the dead-letter setting",
			bad: []projections.Rejected{{Record: rec, Reason: errors.New("not base64")}}, want: []string{"t/2@7", "not base64", "set on_error: dlq"}},
		{why: "an Avro record read as JSON is the config's, not the data's: it stops the projection, under dlq too, naming input.format",
			bad: []projections.Rejected{{Record: rec, Reason: fmt.Errorf("decoding: %w", debezium.ErrAvroNotJSON)}}, want: []string{"t/2@7", "set input.format: avro"}, stop: true, dlq: true},
		{why: "a JSON record read as Avro names input.format: json",
			bad: []projections.Rejected{{Record: rec, Reason: debezium.ErrNotAvro}}, want: []string{"set input.format: json"}, stop: true},
		{why: "a mapped column missing from the event is a DDL, which stops the projection naming the key",
			bad: []projections.Rejected{{Record: rec, Reason: projections.MissingColumn("id")}}, want: []string{"projections.p.columns.id"}, stop: true},
	}
	for _, c := range cases {
		pr := stageProjector(nil)
		pr.p = p
		if c.dlq {
			// A client of no broker: dead-lettering would fail.
			cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.RetryTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			pr.dlq = cl
		}
		err := pr.unmapped(t.Context(), c.bad)
		if (err == nil) != (c.want == nil) {
			t.Fatalf("%s: %v, want an error with %q", c.why, err, c.want)
		}
		var se *projections.StopError
		if errors.As(err, &se) != c.stop {
			t.Errorf("%s: %v: StopError %v, want %v", c.why, err, !c.stop, c.stop)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, err, w)
			}
		}
	}
}
