package main

// The reshards `readside status` and /status show: `_readside_reshards`
// on every server of every sink in the config (a reshard's row is on the
// servers of the sink it moves to, which the config may not name for the
// projection yet).

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/readside/readside/config"
	"github.com/readside/readside/reshard"
)

// reshardReader reads the reshards recorded on cfg's sink servers,
// keeping one connection pool per server for its life.
type reshardReader struct {
	dsns []string
	mu   sync.Mutex
	dbs  map[string]*sql.DB
}

func newReshardReader(cfg config.Config) *reshardReader {
	seen := map[string]bool{}
	r := &reshardReader{dbs: map[string]*sql.DB{}}
	for _, s := range cfg.Sinks {
		dsns := []string{s.DSN.Reveal()}
		for _, sh := range s.Shards {
			dsns = append(dsns, sh.DSN.Reveal())
		}
		for _, d := range dsns {
			if d != "" && !seen[d] {
				seen[d] = true
				r.dsns = append(r.dsns, d)
			}
		}
	}
	sort.Strings(r.dsns)
	return r
}

// read returns each projection's reshard (the latest row when servers
// differ, as they do between two writes of its progress).
func (r *reshardReader) read(ctx context.Context) ([]reshard.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	latest := map[string]reshard.Status{}
	var firstErr error
	for _, dsn := range r.dsns {
		db := r.dbs[dsn]
		if db == nil {
			var err error
			if db, err = openSinkDB(dsn); err != nil {
				continue // status reports a bad sink DSN elsewhere
			}
			r.dbs[dsn] = db
		}
		ss, err := reshard.ReadStatuses(ctx, db)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, s := range ss {
			if cur, ok := latest[s.Projection]; !ok || s.UpdatedAt.After(cur.UpdatedAt) {
				latest[s.Projection] = s
			}
		}
	}
	out := make([]reshard.Status, 0, len(latest))
	for _, s := range latest {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Projection < out[j].Projection })
	return out, firstErr
}

func (r *reshardReader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, db := range r.dbs {
		db.Close()
	}
}

// printReshards writes the reshards under a heading (nothing when none).
func printReshards(w io.Writer, ss []reshard.Status) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(w, "\nreshards:")
	for _, s := range ss {
		fmt.Fprintln(w, "  "+s.Summary())
	}
}
