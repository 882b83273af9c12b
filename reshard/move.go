package reshard

// A `readside reshard` run as a whole: Prepare finds where the projection
// is served and what is recorded for it, decides the step (Decide) and
// opens and checks what that step works on; Move.Run fills, checks,
// fences and switches (Reshard.Run); Move.Cleanup deletes what the old
// servers no longer serve. The command parses flags, wires and prints.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/readside/readside/config"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// Request is a run that moves a projection to sink To.
type Request struct {
	To      string // the sink it moves to, as in the config
	Fill    string // FillCopy or FillTopics, for a reshard that starts now
	Cleanup bool   // --cleanup: after the cutover, clean up the old servers
	// Sinks are the config's sinks, by name.
	Sinks map[string]config.Sink
	// Open opens a config sink by name; the sinks it opens are the
	// caller's to close.
	Open func(ctx context.Context, name string) (*sinks.Sharded, error)
	// Recorded reads the reshards recorded on every server of every
	// config sink (a reshard's row is on the servers of the sink it moves
	// to); nil when none can be read.
	Recorded func(ctx context.Context) []Status
	// Options are the reshard's, but for Old, New, OldGeneration,
	// OldServers, NewServers and Fill, which Prepare sets.
	Options Options
}

// ConfigError is a run the config does not allow as it stands (a sink
// the recorded reshard needs is gone or changed, a DSN that does not
// parse): the fix is in the config, not in a retry.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Move is a prepared run: its Step, and for StepServed the sink serving
// the projection at Generation; otherwise the reshard from sink From.
type Move struct {
	Step       Step
	Generation uint64 // the routing generation it is served at now
	From       string // the sink it moves from
	Old, New   *sinks.Sharded
	p          *projections.Projection
	r          *Reshard
	pr         *Progress // the recorded progress, nil for a start
	phase      string
	// recordedGeneration is the generation the recorded reshard moves
	// the projection from.
	recordedGeneration uint64
	ran                bool
}

// Prepare decides what a run towards req.To does and opens the sinks it
// works on. For StepServed nothing else is prepared.
func Prepare(ctx context.Context, p *projections.Projection, req Request) (*Move, error) {
	newSink, err := req.Open(ctx, req.To)
	if err != nil {
		return nil, err
	}
	m := &Move{New: newSink, p: p}
	served, err := m.served(ctx, req)
	if err != nil {
		return nil, err
	}
	recordedTo, err := m.recorded(ctx, req)
	if err != nil {
		return nil, err
	}
	if m.Step, err = Decide(p.Name, served, req.To, recordedTo, m.phase, req.Cleanup); err != nil {
		return nil, err
	}
	if m.Step == StepServed {
		return m, nil
	}
	m.From = served
	if m.Step != StepStart {
		m.From, m.Generation = m.pr.FromSink, m.recordedGeneration
		if _, ok := req.Sinks[m.From]; !ok {
			return nil, &ConfigError{fmt.Errorf("the reshard of %s moves it from sink %s, which the config no longer names: add sinks.%s back as it was", p.Name, m.From, m.From)}
		}
	}
	if err := m.openOld(ctx, req); err != nil {
		return nil, err
	}
	if err := m.newReshard(req); err != nil {
		return nil, err
	}
	if m.Step == StepStart {
		m.pr = nil
	}
	return m, nil
}

// served is the sink serving the projection now ("" when its servers
// disagree: a cutover under way), and its generation in m.Generation.
func (m *Move) served(ctx context.Context, req Request) (string, error) {
	res, err := sinks.Resolve(ctx, req.Sinks, m.p, req.Open)
	var unsettled *keyspace.RoutingUnsettled
	switch {
	case errors.As(err, &unsettled):
		return "", nil
	case err != nil:
		return "", err
	}
	m.Generation = res.Generation
	return res.Name, nil
}

// recorded reads the reshard recorded for the projection on NEW (its
// progress in m.pr, its phase in m.phase) and returns the sink it moves
// to; a reshard of it towards another sink, still active, keeps its row
// on that sink's servers.
func (m *Move) recorded(ctx context.Context, req Request) (string, error) {
	if err := m.New.Exec(ctx, sinks.ReshardDDL()); err != nil {
		return "", fmt.Errorf("sink %s: %w", req.To, err)
	}
	st, pr, err := Load(ctx, m.New, m.p.Name)
	if err != nil {
		return "", err
	}
	m.pr = pr
	recordedTo := ""
	if st != nil {
		recordedTo, m.phase, m.recordedGeneration = st.ToSink, st.Phase, st.FromGeneration
	}
	if !Active(m.phase) && req.Recorded != nil {
		for _, o := range req.Recorded(ctx) {
			if o.Projection == m.p.Name && o.ToSink != req.To && Active(o.Phase) {
				recordedTo, m.phase = o.ToSink, o.Phase
			}
		}
	}
	return recordedTo, nil
}

// openOld opens the sink the projection moves from and checks that the
// config still gives it the ranges the recorded reshard began with.
func (m *Move) openOld(ctx context.Context, req Request) error {
	old, err := req.Open(ctx, m.From)
	if err != nil {
		return err
	}
	m.Old = old
	if m.pr != nil && m.Step != StepStart && strings.Join(old.Ranges(), ",") != strings.Join(m.pr.FromRanges, ",") {
		return &ConfigError{fmt.Errorf("sink %s has ranges %s in the config, but the reshard of %s recorded %s: restore sinks.%s as it was", m.From, strings.Join(old.Ranges(), ","), m.p.Name, strings.Join(m.pr.FromRanges, ","), m.From)}
	}
	return nil
}

// newReshard makes the Reshard of the step: a resumed fill goes on as it
// began.
func (m *Move) newReshard(req Request) error {
	oldServers, err := servers(req.Sinks, m.From)
	if err != nil {
		return &ConfigError{err}
	}
	newServers, err := servers(req.Sinks, req.To)
	if err != nil {
		return &ConfigError{err}
	}
	o := req.Options
	o.Old, o.New, o.OldGeneration, o.OldServers, o.NewServers = m.Old, m.New, m.Generation, oldServers, newServers
	o.Fill = req.Fill
	if m.pr != nil && m.Step == StepResume {
		o.Fill = m.pr.Fill
	}
	if m.r, err = New(m.p, o); err != nil {
		return &ConfigError{err}
	}
	return nil
}

// servers are the server of each shard of config sink name.
func servers(configured map[string]config.Sink, name string) ([]string, error) {
	sc := configured[name]
	dsns := []string{sc.DSN.Reveal()}
	if len(sc.Shards) > 0 {
		dsns = dsns[:0]
		for _, sh := range sc.Shards {
			dsns = append(dsns, sh.DSN.Reveal())
		}
	}
	var out []string
	for _, d := range dsns {
		s, err := Server(d)
		if err != nil {
			return nil, fmt.Errorf("sinks.%s: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Pieces are the key ranges the reshard fills.
func (m *Move) Pieces() []Piece { return m.r.Pieces() }

// Run runs the reshard, from the recorded phase for StepResume, through
// the cutover.
func (m *Move) Run(ctx context.Context) (Result, error) {
	m.ran = true
	return m.r.Run(ctx, m.pr, m.phase)
}

// Cleanup deletes the rows the old servers no longer serve and returns
// how many it deleted and the servers it dropped the projection from
// (over every run of it). After Run it reads the progress the cutover
// recorded.
func (m *Move) Cleanup(ctx context.Context) (deleted int64, dropped []string, err error) {
	pr := m.pr
	if m.ran {
		if _, pr, err = Load(ctx, m.New, m.p.Name); err != nil {
			return 0, nil, err
		}
	}
	if err := m.r.Cleanup(ctx, pr); err != nil {
		return 0, nil, err
	}
	return pr.RowsDeleted, pr.Dropped, nil
}
