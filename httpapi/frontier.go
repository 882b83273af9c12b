package httpapi

// Transaction-consistent sinks in /status and /wait?sink=S&gtid=G
// (docs/design/consistent-sinks.md). /wait for a sink answers 200 once the
// frontier of every shard contains G: the shard's committed read tables
// are then the source's state at a cut past G, so a read after the 200
// sees G's writes and every transaction before it, in every read table of
// the sink at once.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
)

// ConsistentSink is a transaction-consistent sink and its shards.
type ConsistentSink struct {
	Name   string
	Shards []SinkDSN
}

// SinkStatus is a transaction-consistent sink in /status.
type SinkStatus struct {
	Name        string           `json:"name"`
	Consistency string           `json:"consistency"`
	Frontiers   []FrontierStatus `json:"frontiers"`
	// Committing is the commit this process's applier of the sink is
	// making, if any: the frontiers stand still until it lands.
	Committing *projector.CommitProgress `json:"committing,omitempty"`
}

// FrontierStatus is one shard's frontier: the cut of the source its read
// tables are at.
type FrontierStatus struct {
	Shard string `json:"shard"`
	// CheckpointOffset is the cut's offset in the checkpoint topic; -1:
	// nothing committed yet.
	CheckpointOffset  int64      `json:"checkpoint_offset"`
	Flavor            string     `json:"flavor,omitempty"`
	GTID              string     `json:"gtid,omitempty"`
	File              string     `json:"file,omitempty"`
	Pos               uint32     `json:"pos,omitempty"`
	SourceCommittedAt *time.Time `json:"source_committed_at,omitempty"`
	AppliedAt         *time.Time `json:"applied_at,omitempty"`
	Transactions      uint64     `json:"transactions"`
	Commits           uint64     `json:"commits"`
	// Loading: the initial snapshot was not complete at the cut.
	Loading bool   `json:"loading,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (c *Collector) sinkStatus(ctx context.Context, cs ConsistentSink) SinkStatus {
	out := SinkStatus{Name: cs.Name, Consistency: "transaction"}
	if c.opts.CommitUnderWay != nil {
		if p, ok := c.opts.CommitUnderWay(cs.Name); ok {
			out.Committing = &p
		}
	}
	for _, s := range cs.Shards {
		fs, err := c.frontier(ctx, s, cs.Name)
		if err != nil {
			fs = FrontierStatus{Shard: s.Name, CheckpointOffset: -1, Error: err.Error()}
		}
		out.Frontiers = append(out.Frontiers, fs)
	}
	return out
}

func (c *Collector) frontier(ctx context.Context, s SinkDSN, sink string) (FrontierStatus, error) {
	db, err := c.db(s)
	if err != nil {
		return FrontierStatus{}, err
	}
	f, err := sinks.ReadFrontier(ctx, db, sink)
	if err != nil {
		return FrontierStatus{}, err
	}
	st := FrontierStatus{Flavor: f.Flavor, Shard: s.Name, CheckpointOffset: f.Checkpoint, GTID: f.GTID, File: f.File, Pos: f.Pos,
		Transactions: f.Transactions, Commits: f.Commits, Loading: f.Loading}
	if f.SourceTS > 0 {
		at := time.Unix(f.SourceTS, 0).UTC()
		st.SourceCommittedAt = &at
	}
	if f.Checkpoint >= 0 {
		at := f.AppliedAt.UTC()
		st.AppliedAt = &at
	}
	return st, nil
}

// serveSinkWait answers /wait?sink=S&gtid=G.
func (c *Collector) serveSinkWait(w http.ResponseWriter, r *http.Request, name, gtid string, timeout time.Duration) {
	var cs *ConsistentSink
	var names []string
	for i := range c.opts.ConsistentSinks {
		names = append(names, c.opts.ConsistentSinks[i].Name)
		if c.opts.ConsistentSinks[i].Name == name {
			cs = &c.opts.ConsistentSinks[i]
		}
	}
	if cs == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("sink %q is not a transaction-consistent sink (consistency: transaction); those are: %s",
			name, strings.Join(names, ", "))})
		return
	}
	serveWaitFor(w, r, timeout, map[string]any{"sink": cs.Name, "gtid": gtid}, func(ctx context.Context) (string, error) {
		return c.WaitSink(ctx, *cs, gtid)
	})
}

// WaitSink returns nil once every shard's frontier of cs contains gtid;
// on a timeout (ctx) it returns ctx's error and the shard it was waiting
// for. Any other error is the caller's (an unparsable GTID).
func (c *Collector) WaitSink(ctx context.Context, cs ConsistentSink, gtid string) (waitingFor string, err error) {
	for _, s := range cs.Shards {
		waitingFor = "shard " + s.Name + "'s frontier to pass " + gtid
		for {
			f, ferr := c.frontier(ctx, s, cs.Name)
			if ferr == nil && f.GTID != "" {
				at := cdc.Position{Flavor: f.Flavor, GTID: f.GTID}
				ok, cerr := at.Contains(cdc.Position{Flavor: f.Flavor, GTID: gtid})
				if cerr != nil {
					return waitingFor, fmt.Errorf("gtid %q: %v", gtid, cerr)
				}
				if ok {
					break
				}
				waitingFor = fmt.Sprintf("shard %s's frontier (at %s) to pass %s", s.Name, f.GTID, gtid)
			} else if ferr != nil {
				waitingFor = fmt.Sprintf("shard %s's frontier: %v", s.Name, ferr)
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return waitingFor, err
			}
		}
	}
	return "", nil
}
