package projector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// followSink is a Sink whose read table refuses rows until it has been
// altered `needs` times; alters is what each FollowSchema reports.
type followSink struct {
	needs   int
	alters  []projections.SchemaChange
	refused []projections.SchemaChange
	applies int
	follows int
	failing error // what a refused Apply returns
}

//lint:ignore ST1005 the refusal as MariaDB words it
var errTooLong = errors.New("Data too long for column 'name'")

func (s *followSink) Offsets(context.Context, *projections.Projection) (event.Offsets, error) {
	return nil, nil
}
func (s *followSink) Apply(context.Context, *projections.Projection, *projections.Batch) error {
	s.applies++
	if s.needs > 0 {
		return s.failing
	}
	return nil
}
func (s *followSink) SchemaRejection(err error) bool { return errors.Is(err, errTooLong) }
func (s *followSink) FollowSchema(context.Context, *projections.Projection, projections.Types) ([]projections.SchemaChange, []projections.SchemaChange, error) {
	s.follows++
	if len(s.alters) > 0 {
		s.needs--
	}
	return s.alters, s.refused, nil
}

func TestApplyFollowing(t *testing.T) {
	widen := []projections.SchemaChange{{Column: "name", Why: "a widening", Alter: "ALTER TABLE t MODIFY name varchar(200)"}}
	lossy := []projections.SchemaChange{{Column: "d", Why: "a different type", Alter: "ALTER TABLE t MODIFY d varchar(30)"}}
	readable := func(context.Context) (projections.Types, error) { return projections.Types{}, nil }
	cases := []struct {
		why              string
		sink             followSink
		source           func(context.Context) (projections.Types, error)
		applies, follows int
		err              []string // "": nil
	}{
		{why: "a refusal an ALTER cures: altered, then the batch applies in a new attempt",
			sink: followSink{needs: 1, alters: widen, failing: errTooLong}, source: readable, applies: 2, follows: 1},
		{why: "a read table that matches the source: the refusal is bad data, returned for on_error",
			sink: followSink{needs: 1, failing: errTooLong}, source: readable, applies: 1, follows: 1, err: []string{"Data too long"}},
		{why: "only a change that could lose values: the projection stops naming the column's key and the rebuild",
			sink: followSink{needs: 1, refused: lossy, failing: errTooLong}, source: readable, applies: 1, follows: 1,
			err: []string{"projection p stopped", "projections.p.columns.d", "MODIFY d varchar(30)", "readside replay --projection p --rebuild"}},
		{why: "an unreadable source: the projection stops naming source.dsn",
			sink: followSink{needs: 1, alters: widen, failing: errTooLong}, source: func(context.Context) (projections.Types, error) {
				return projections.Types{}, errors.New("access denied")
			},
			applies: 1, err: []string{"projection p stopped", "access denied", "source.dsn"}},
		{why: "a process without source access (no SourceTypes) leaves the refusal to on_error",
			sink: followSink{needs: 1, alters: widen, failing: errTooLong}, applies: 1, err: []string{"Data too long"}},
		{why: "a failure to reach the sink is no schema's doing: not followed",
			sink: followSink{needs: 1, alters: widen, failing: errors.New("invalid connection")}, source: readable, applies: 1, err: []string{"invalid connection"}},
		{why: "a sink that keeps refusing after its ALTERs: bounded, the refusal returned",
			sink: followSink{needs: 100, alters: widen, failing: errTooLong}, source: readable, applies: maxFollows + 1, follows: maxFollows, err: []string{"Data too long"}},
	}
	for _, c := range cases {
		p := &projections.Projection{Name: "p", Table: "t", SourceTypes: c.source}
		pr := &Projector{p: p, sink: &c.sink, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		err := pr.applyFollowing(t.Context(), &projections.Batch{})
		if c.sink.applies != c.applies || c.sink.follows != c.follows {
			t.Errorf("%s: %d applies and %d follows, want %d and %d", c.why, c.sink.applies, c.sink.follows, c.applies, c.follows)
		}
		switch {
		case c.err == nil && err != nil:
			t.Errorf("%s: %v, want nil", c.why, err)
		case c.err != nil && err == nil:
			t.Errorf("%s: nil, want an error with %q", c.why, c.err)
		}
		for _, w := range c.err {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, err, w)
			}
		}
	}
}
