package rebuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/projections"
)

// fakeSink is a sharded sink's rebuild side in memory: the tables of each
// shard, the recorded phases and what was done, in order.
type fakeSink struct {
	mu        sync.Mutex
	tables    []map[string]bool
	phases    map[string]string
	stored    map[string][]event.Offsets // per projection, per shard
	missing   []string
	calls     []string // "create T", "swap 1", "forget P", "phase P=x", "drop T"
	failSwap  map[int]error
	failPhase error
}

var _ Sink = (*fakeSink)(nil)

func newFakeSink(shards ...[]string) *fakeSink {
	f := &fakeSink{phases: map[string]string{}, stored: map[string][]event.Offsets{}, failSwap: map[int]error{}}
	for _, ts := range shards {
		m := map[string]bool{}
		for _, t := range ts {
			m[t] = true
		}
		f.tables = append(f.tables, m)
	}
	return f
}

func (f *fakeSink) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeSink) Phase(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.phases[name], nil
}

func (f *fakeSink) SetPhase(_ context.Context, name, phase string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPhase != nil {
		return f.failPhase
	}
	f.record("phase %s=%s", name, phase)
	if phase == "" {
		delete(f.phases, name)
	} else {
		f.phases[name] = phase
	}
	return nil
}

func (f *fakeSink) ShardOffsets(_ context.Context, p *projections.Projection) ([]event.Offsets, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.stored[p.OffsetsName()]; ok {
		return o, nil
	}
	return make([]event.Offsets, len(f.tables)), nil
}

func (f *fakeSink) Forget(_ context.Context, p *projections.Projection) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("forget %s", p.Name)
	delete(f.stored, p.Name)
	return nil
}

func (f *fakeSink) Exists(_ context.Context, table string) ([]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]bool, len(f.tables))
	for i, ts := range f.tables {
		out[i] = ts[table]
	}
	return out, nil
}

// Create is CREATE TABLE IF NOT EXISTS, as sinks.DDL is.
func (f *fakeSink) Create(_ context.Context, p *projections.Projection, _ projections.Types) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("create %s", p.Table)
	for _, ts := range f.tables {
		ts[p.Table] = true
	}
	return nil
}

// Swap is RENAME TABLE: it fails when a source is missing or a target exists.
func (f *fakeSink) Swap(_ context.Context, i int, _ *projections.Projection, live, shadow, old string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failSwap[i]; err != nil {
		return err
	}
	ts := f.tables[i]
	if !ts[live] || !ts[shadow] || ts[old] {
		return fmt.Errorf("shard %d: RENAME TABLE %s TO %s, %s TO %s: tables %v", i, live, old, shadow, live, ts)
	}
	f.record("swap %d", i)
	delete(ts, shadow)
	ts[old] = true
	return nil
}

func (f *fakeSink) Drop(_ context.Context, _ *projections.Projection, table string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("drop %s", table)
	for _, ts := range f.tables {
		delete(ts, table)
	}
	return nil
}

func (f *fakeSink) MissingColumns(_ context.Context, _ *projections.Projection, cols []string) ([]string, error) {
	var out []string
	for _, c := range cols {
		if slices.Contains(f.missing, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// shardTables lists each shard's tables, sorted, for comparisons.
func (f *fakeSink) shardTables() string {
	var out []string
	for _, ts := range f.tables {
		var names []string
		for t := range ts {
			names = append(names, t)
		}
		slices.Sort(names)
		out = append(out, strings.Join(names, ","))
	}
	return strings.Join(out, " | ")
}

// fakeTopics is the broker: fixed end offsets and log starts.
type fakeTopics struct {
	ends, starts event.Offsets
	endCalls     int
}

func (t *fakeTopics) EndOffsets(context.Context, *projections.Projection) (event.Offsets, error) {
	t.endCalls++
	return t.ends, nil
}

func (t *fakeTopics) TrimmedStarts(context.Context, *projections.Projection) (event.Offsets, error) {
	return t.starts, nil
}

// fakeProjector has applied everything up to applied at once, or stops
// with err; it runs until cancelled.
type fakeProjector struct {
	applied event.Offsets
	err     error
}

func (p *fakeProjector) Run(ctx context.Context) error {
	if p.err != nil {
		return p.err
	}
	<-ctx.Done()
	return nil
}

func (p *fakeProjector) Applied() event.Offsets { return p.applied }

// bed is a Rebuild over fakes, recording which projections it ran and
// through which sink.
type bed struct {
	r       *Rebuild
	sink    *fakeSink
	topics  *fakeTopics
	out     *bytes.Buffer
	log     *bytes.Buffer
	runs    []string // "<projection>[ offsets <offsets name>]/<table> via <sink>"
	runErr  error    // what every projector stops with
	applied event.Offsets
}

// applySink and backfillSink tell the sinks a projector was given apart.
type namedSink struct{ name string }

func (namedSink) Offsets(context.Context, *projections.Projection) (event.Offsets, error) {
	return nil, nil
}
func (namedSink) Apply(context.Context, *projections.Projection, *projections.Batch) error {
	return nil
}

func testProjection() *projections.Projection {
	return &projections.Projection{Name: "orders", SourceDB: "shop", SourceTbl: "orders", Topic: "rs.shop.orders",
		Sink: "reads", Table: "orders_read", Key: []string{"id"},
		Columns: []projections.Column{{Name: "id"}, {Name: "body"}, {Name: "note"}}}
}

func newBed(t *testing.T, sink *fakeSink) *bed {
	t.Helper()
	b := &bed{sink: sink, out: &bytes.Buffer{}, log: &bytes.Buffer{},
		topics:  &fakeTopics{ends: event.Offsets{"rs.shop.orders": {0: 10, 1: 4}}},
		applied: event.Offsets{"rs.shop.orders": {0: 10, 1: 4}}}
	log := slog.New(slog.NewTextHandler(b.log, nil))
	r, err := New(testProjection(), sink, Options{
		Apply: namedSink{"apply"},
		Backfill: func(p *projections.Projection, cols []string) (projections.Sink, error) {
			return namedSink{"backfill " + strings.Join(cols, ",")}, nil
		},
		Topics:       b.topics,
		SourceTypes:  func(context.Context) (projections.Types, error) { return projections.Types{}, nil },
		ProjectorLog: func() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) },
		Log:          log,
		Progress:     progress.Line{Out: b.out},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.poll = time.Millisecond
	r.newProjector = func(p *projections.Projection, s projections.Sink) (filler, error) {
		name := p.Name
		if p.OffsetsName() != p.Name {
			name += " offsets " + p.OffsetsName()
		}
		b.runs = append(b.runs, fmt.Sprintf("%s/%s via %s", name, p.Table, s.(namedSink).name))
		return &fakeProjector{applied: b.applied, err: b.runErr}, nil
	}
	b.r = r
	return b
}

// TestNewRefusesMissingParts: a rebuild wired without a part it needs is
// refused when made, naming the part, not when a run reaches it.
func TestNewRefusesMissingParts(t *testing.T) {
	_, err := New(testProjection(), newFakeSink(), Options{Log: slog.Default()})
	for _, want := range []string{"no Apply", "no Backfill", "no Topics", "no SourceTypes", "no ProjectorLog", "no Progress.Out"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New without parts: error %v, want it to name %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "no Log") {
		t.Errorf("New names a part it was given: %v", err)
	}
	if _, err := New(nil, nil, Options{}); err == nil || !strings.Contains(err.Error(), "no projection") {
		t.Errorf("New(nil): %v, want it to name the projection", err)
	}
}
