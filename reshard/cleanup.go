package reshard

import (
	"context"
	"fmt"

	"github.com/readside/readside/sinks"
)

// Cleanup removes from OLD's servers what NEW no longer places there, once
// the cutover is done (pr is the recorded progress): on a server NEW also
// uses, the rows whose keyspace id no NEW shard of that server holds
// (read in key chunks, routed as the projector routes, deleted by key; the
// cursor recorded after each chunk); on a server NEW does not use, the
// read table, its state tables and everything kept under the
// projection's name (its routing row stays: it names where the
// projection went). Then the phase is clean.
func (r *Reshard) Cleanup(ctx context.Context, pr *Progress) error {
	r.pr = pr
	r.phase = PhaseDone
	if pr.Clean == nil {
		pr.Clean, pr.CleanDone = map[string][]string{}, map[string]bool{}
	}
	for _, s := range r.servers() {
		if !s.old || pr.CleanDone[s.id] {
			continue
		}
		var mine []Shard
		for j, sh := range r.o.New.Shards {
			if r.o.NewServers[j] == s.id {
				mine = append(mine, Shard{Range: sh.Range, Server: s.id})
			}
		}
		if len(mine) == 0 {
			if err := s.db.DropProjection(ctx, r.p); err != nil {
				return fmt.Errorf("dropping %s from %s: %w", r.p.Table, s.id, err)
			}
			r.o.Log.Info("reshard cleanup: dropped the projection from a server the new sink does not use", "projection", r.p.Name, "server", s.id)
			pr.Dropped = append(pr.Dropped, s.id)
		} else if !r.p.Replicated {
			if err := r.cleanServer(ctx, s, mine); err != nil {
				return err
			}
		}
		pr.CleanDone[s.id] = true
		if err := r.st.save(ctx, r.phase, pr); err != nil {
			return err
		}
	}
	r.o.Progress.Count("cleanup", pr.RowsDeleted, pr.RowsDeleted, "rows deleted", true)
	return r.st.save(ctx, PhaseClean, pr)
}

// cleanServer deletes the rows of s's read table that none of mine (the
// NEW shards on s) holds, and an aggregate's distinct values of those
// groups.
func (r *Reshard) cleanServer(ctx context.Context, s *server, mine []Shard) error {
	ts := r.readScan()
	after, err := sinks.DecodeCursor(r.pr.Clean[s.id])
	if err != nil {
		return err
	}
	total, _ := s.db.TableRows(ctx, r.p.Table)
	for {
		c, err := s.db.ScanChunk(ctx, ts, after, r.o.ChunkRows)
		if err != nil {
			return fmt.Errorf("%s: %w", s.id, err)
		}
		if c.Len() == 0 {
			return nil
		}
		after = c.Last()
		var gone [][]any
		for i := range c.Rows {
			placed := false
			for _, m := range mine {
				if m.Range.Contains(c.IDs[i]) {
					placed = true
					break
				}
			}
			if !placed {
				gone = append(gone, c.Key(i))
			}
		}
		if err := s.db.DeleteKeys(ctx, r.p.Table, r.p.Key, gone); err != nil {
			return fmt.Errorf("%s: %w", s.id, err)
		}
		// A group that left the server leaves its distinct values (the
		// contributions stay: every shard stores all of them).
		tables, groupCols := sinks.DistinctGroupTables(r.p)
		for _, t := range tables {
			if err := s.db.DeleteKeys(ctx, t, groupCols, gone); err != nil {
				return fmt.Errorf("%s: %w", s.id, err)
			}
		}
		r.pr.RowsDeleted += int64(len(gone))
		r.pr.Clean[s.id] = sinks.EncodeCursor(after)
		if err := r.st.save(ctx, r.phase, r.pr); err != nil {
			return err
		}
		r.o.Progress.Count("cleanup of "+s.id, r.pr.RowsDeleted, max(total, r.pr.RowsDeleted), "rows deleted", false)
	}
}
