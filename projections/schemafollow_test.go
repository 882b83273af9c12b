package projections

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestDroppedColumn(t *testing.T) {
	p := &Projection{Name: "orders", SourceDB: "shop", SourceTbl: "orders", Topic: "rs.shop.orders",
		Columns: []Column{{Name: "id", Source: "id"}, {Name: "memo", Source: "note"}},
		Joins: []*Join{{N: 1, ParentDB: "shop", ParentTbl: "customers", Topic: "rs.shop.customers",
			On: []JoinOn{{Parent: "id", Child: "customer_id", Read: "customer_id"}}, Columns: []Column{{Name: "customer_name", Source: "name"}}}}}
	cases := []struct {
		why    string
		topic  string
		reason error
		want   []string // "": no StopError
	}{
		{"a mapped source column gone from the source's events names the read column's key, not the source name",
			"rs.shop.orders", &missingColumn{"note"}, []string{"shop.orders.note", "projections.orders.columns.memo", "remove projections.orders.columns.memo", "readside plan --apply"}},
		{"found through the key's wrapping",
			"rs.shop.orders", fmt.Errorf("key column %q: %w", "id", &missingColumn{"id"}), []string{"projections.orders.columns.id"}},
		{"a parent's column names the join's columns entry",
			"rs.shop.customers", &missingColumn{"name"}, []string{"shop.customers.name", "projections.orders.join[0].columns.customer_name"}},
		{"a parent's key column names the join's on",
			"rs.shop.customers", &missingColumn{"id"}, []string{"projections.orders.join[0].on"}},
		{"bad data is for on_error, not a stop", "rs.shop.orders", fmt.Errorf("column %q: not base64", "memo"), nil},
	}
	for _, c := range cases {
		err := p.droppedColumn(c.topic, c.reason)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: got %v, want none", c.why, err)
			}
			continue
		}
		se, ok := err.(*StopError)
		if !ok {
			t.Errorf("%s: got %v (%T), want a *StopError", c.why, err, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(se.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, se.Error(), w)
			}
		}
	}
}

// followSink is a Sink whose read table refuses rows until it has been
// altered `needs` times; alters is what each FollowSchema reports.
type followSink struct {
	needs   int
	alters  []SchemaChange
	refused []SchemaChange
	applies int
	follows int
	failing error // what a refused Apply returns
}

//lint:ignore ST1005 the refusal as MariaDB words it
var errTooLong = errors.New("Data too long for column 'name'")

func (s *followSink) Offsets(context.Context, *Projection) (Offsets, error) { return nil, nil }
func (s *followSink) Apply(context.Context, *Projection, *Batch) error {
	s.applies++
	if s.needs > 0 {
		return s.failing
	}
	return nil
}
func (s *followSink) SchemaRejection(err error) bool { return errors.Is(err, errTooLong) }
func (s *followSink) FollowSchema(context.Context, *Projection, Types) ([]SchemaChange, []SchemaChange, error) {
	s.follows++
	if len(s.alters) > 0 {
		s.needs--
	}
	return s.alters, s.refused, nil
}

func TestApplyFollowing(t *testing.T) {
	widen := []SchemaChange{{Column: "name", Why: "a widening", Alter: "ALTER TABLE t MODIFY name varchar(200)"}}
	lossy := []SchemaChange{{Column: "d", Why: "a different type", Alter: "ALTER TABLE t MODIFY d varchar(30)"}}
	readable := func(context.Context) (Types, error) { return Types{}, nil }
	cases := []struct {
		why              string
		sink             followSink
		source           func(context.Context) (Types, error)
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
			sink: followSink{needs: 1, alters: widen, failing: errTooLong}, source: func(context.Context) (Types, error) { return Types{}, errors.New("access denied") },
			applies: 1, err: []string{"projection p stopped", "access denied", "source.dsn"}},
		{why: "a process without source access (no SourceTypes) leaves the refusal to on_error",
			sink: followSink{needs: 1, alters: widen, failing: errTooLong}, applies: 1, err: []string{"Data too long"}},
		{why: "a failure to reach the sink is no schema's doing: not followed",
			sink: followSink{needs: 1, alters: widen, failing: errors.New("invalid connection")}, source: readable, applies: 1, err: []string{"invalid connection"}},
		{why: "a sink that keeps refusing after its ALTERs: bounded, the refusal returned",
			sink: followSink{needs: 100, alters: widen, failing: errTooLong}, source: readable, applies: maxFollows + 1, follows: maxFollows, err: []string{"Data too long"}},
	}
	for _, c := range cases {
		p := &Projection{Name: "p", Table: "t", SourceTypes: c.source}
		pr := &Projector{p: p, sink: &c.sink, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		err := pr.applyFollowing(t.Context(), &Batch{})
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
