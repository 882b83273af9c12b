package reshard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// runFill fills every piece on its NEW shard: by copy (each piece's rows
// from its OLD shards, then the fill identity's offsets set to where the
// copies began) or from the topics (the fill projector from the earliest
// offsets up to the topics' ends now). Either way the fill projector goes
// on from there (catching-up).
func (r *Reshard) runFill(ctx context.Context, f *filler) error {
	if r.pr.Fill == FillTopics {
		ends, err := r.o.Topics.EndOffsets(ctx, r.p)
		if err != nil {
			return err
		}
		started := time.Now()
		if err := f.waitFor(ctx, ends, "filling "+r.p.Table+" from the topics"); err != nil {
			return err
		}
		took := time.Since(started)
		n, err := r.countPieces(ctx)
		if err != nil {
			return err
		}
		r.pr.RowsCopied, r.pr.FillRate = n, float64(n)/took.Seconds()
		r.o.Log.Info("reshard: filled the pieces from the topics", "projection", r.p.Name, "rows", n, "took", took.Round(time.Millisecond), "rows_per_second", int64(r.pr.FillRate))
		return nil
	}
	return r.copyPieces(ctx)
}

// copyConcurrency bounds the piece copies that run at once.
const copyConcurrency = 4

// saveEvery is how often a copy records its cursors while it runs.
const saveEvery = time.Second

// readScan is how the copy reads p's read table.
func (r *Reshard) readScan() sinks.TableScan {
	ts := sinks.TableScan{Table: r.p.Table, Key: r.p.Key}
	if !r.p.Replicated {
		ts.Shard = r.p.ShardBy
	}
	return ts
}

// readGuards are the version columns of p's read table and what each
// guards: each join's columns by its join version, the rest by
// _rs_version (last: the upsert assigns it after everything).
func (r *Reshard) readGuards() []sinks.Guard {
	var out []sinks.Guard
	for _, j := range r.p.Joins {
		g := sinks.Guard{Version: j.VersionColumn()}
		for _, c := range j.Columns {
			g.Columns = append(g.Columns, c.Name)
		}
		out = append(out, g)
	}
	return append(out, sinks.Guard{Version: "_rs_version"})
}

// copyPieces copies every piece not yet copied, then sets the fill
// identity's offsets on each NEW shard that received pieces to the lowest,
// per partition, of the offsets its pieces' sources had before their rows
// were read: the catch-up re-applies from there whatever the copy may
// have missed (version guards make the overlap harmless).
func (r *Reshard) copyPieces(ctx context.Context) error {
	started := time.Now()
	var copied int64
	r.pr.RowsTotal = 0
	for _, pp := range r.pr.Pieces {
		for _, sp := range pp.Sources {
			if n, err := r.o.Old.Shards[sp.From].TableRows(ctx, r.p.Table); err == nil {
				r.pr.RowsTotal += n
			}
		}
	}
	// Each piece from each of its sources at once: they read and write
	// different servers (or different rows of the same).
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(copyConcurrency)
	var mu sync.Mutex
	for pi := range r.pr.Pieces {
		pp := &r.pr.Pieces[pi]
		for si := range pp.Sources {
			g.Go(func() error {
				n, err := r.copySource(gctx, pp, &pp.Sources[si])
				mu.Lock()
				copied += n
				mu.Unlock()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if el := time.Since(started).Seconds(); copied > 0 && el > 0 {
		r.pr.FillRate = float64(copied) / el
	}
	if err := r.refreshCopiedChildren(ctx); err != nil {
		return err
	}
	if err := r.rebuildCopiedGroups(ctx); err != nil {
		return err
	}
	byShard := map[int]event.Offsets{}
	for _, pp := range r.pr.Pieces {
		for _, sp := range pp.Sources {
			if !sp.OffsetsRead {
				continue // an aggregate's other sources: nothing copied from them
			}
			if o, ok := byShard[pp.To]; ok {
				byShard[pp.To] = o.Min(sp.Offsets)
			} else {
				byShard[pp.To] = sp.Offsets
			}
		}
	}
	for to, offs := range byShard {
		if err := r.o.New.Shards[to].SetOffsets(ctx, r.fill.OffsetsName(), offs); err != nil {
			return err
		}
	}
	r.o.Progress.Count("copying pieces", r.pr.RowsRead, r.pr.RowsRead, "rows read", true)
	r.o.Log.Info("reshard: copied the pieces", "projection", r.p.Name, "rows", copied, "rows_per_second", int64(r.pr.FillRate))
	return nil
}

// copySource copies the rows of piece pp held by one OLD shard, from its
// cursor on, then that shard's tombstones, truncation floors and join
// state of p (whole: harmless anywhere, and parent state belongs on every
// shard).
func (r *Reshard) copySource(ctx context.Context, pp *PieceProgress, sp *SourceProgress) (int64, error) {
	if sp.Done {
		return 0, nil
	}
	src, dst := r.o.Old.Shards[sp.From], r.o.New.Shards[pp.To]
	agg := r.p.Aggregation != nil
	if agg && !r.aggSource(pp, sp) {
		// Every OLD shard stores the same contributions: one copy does.
		r.mu.Lock()
		defer r.mu.Unlock()
		sp.Done = true
		return 0, r.st.save(ctx, r.phase, r.pr)
	}
	if !sp.OffsetsRead {
		// Before any row is read: every change after these offsets is
		// re-applied by the catch-up.
		o, err := src.Offsets(ctx, r.p)
		if err != nil {
			return 0, fmt.Errorf("shard %s of sink %s: %w", src.Range.Text, r.o.Old.Name, err)
		}
		r.mu.Lock()
		sp.Offsets, sp.OffsetsRead = o, true
		err = r.st.save(ctx, r.phase, r.pr)
		r.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	what := "copying the pieces of " + r.p.Table // one bar for the copies running at once
	ts, guards := r.readScan(), r.readGuards()
	keep := func(c *sinks.Chunk, i int) bool {
		return pp.Range.Contains(c.IDs[i]) && (r.p.Replicated || src.Range.Contains(c.IDs[i]))
	}
	if agg {
		// The contributions whole; the group rows are rebuilt from them
		// once every piece is copied (rebuildCopiedGroups).
		cc := sinks.ContributionsCopy(r.p)
		ts, guards = cc.Scan, []sinks.Guard{{Version: cc.Version}}
		keep = func(*sinks.Chunk, int) bool { return true }
	}
	after, err := sinks.DecodeCursor(sp.Cursor)
	if err != nil {
		return 0, err
	}
	var n int64
	var saved time.Time
	chunks, stopReading := r.readAhead(ctx, src, ts, after)
	defer stopReading()
	for {
		var rc readChunk
		select {
		case rc = <-chunks:
		case <-ctx.Done():
			return n, ctx.Err()
		}
		c, err := rc.c, rc.err
		if err != nil {
			return n, fmt.Errorf("shard %s of sink %s: %w", src.Range.Text, r.o.Old.Name, err)
		}
		if c.Len() == 0 {
			break
		}
		after = rc.last
		read := int64(c.Len())
		c.Keep(func(i int) bool { return keep(c, i) })
		if err := dst.UpsertChunk(ctx, ts.Table, ts.Key, guards, c); err != nil {
			return n, fmt.Errorf("shard %s of sink %s: %w", dst.Range.Text, r.o.New.Name, err)
		}
		n += int64(c.Len())
		r.mu.Lock()
		r.pr.RowsRead += read
		sp.Rows += int64(c.Len())
		r.pr.RowsCopied += int64(c.Len())
		sp.Cursor = sinks.EncodeCursor(after)
		pause := r.o.PauseAt == PhaseFilling
		// The cursor is recorded every saveEvery, not after every chunk:
		// a save writes to every NEW server, and a rerun that copies a
		// few chunks again changes nothing (version guards).
		if pause || time.Since(saved) >= saveEvery {
			err, saved = r.st.save(ctx, r.phase, r.pr), time.Now()
		}
		r.o.Progress.Count(what, r.pr.RowsRead, max(r.pr.RowsTotal, r.pr.RowsRead), "rows read", false)
		r.mu.Unlock()
		if err != nil {
			return n, err
		}
		if pause {
			r.o.Log.Warn("reshard: paused for a test", "phase", r.o.PauseAt)
			<-ctx.Done()
			return n, ctx.Err()
		}
	}
	if err := r.copyState(ctx, src, dst, r.newOnly(pp.To)); err != nil {
		return n, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sp.Done = true
	return n, r.st.save(ctx, r.phase, r.pr)
}

// readChunk is a chunk read ahead, with the key it ends at (taken before
// the writer filters it).
type readChunk struct {
	c    *sinks.Chunk
	last []any
	err  error
}

// readAhead reads src's chunks after the key after one ahead of the
// writer, so reading the source and writing the target overlap. The
// channel ends with an empty chunk or an error; stop ends the reader.
func (r *Reshard) readAhead(ctx context.Context, src sinks.Shard, ts sinks.TableScan, after []any) (<-chan readChunk, func()) {
	rctx, cancel := context.WithCancel(ctx)
	out := make(chan readChunk, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := src.ScanChunk(rctx, ts, after, r.o.ChunkRows)
			rc := readChunk{c: c, err: err}
			if err == nil {
				rc.last = c.Last()
			}
			// Decided before the send: the writer filters the chunk in
			// place, and one it empties is not the end of the table.
			end := err != nil || c.Len() == 0
			select {
			case out <- rc:
			case <-rctx.Done():
				return
			}
			if end {
				return
			}
			after = rc.last
		}
	}()
	return out, func() { cancel(); <-done }
}

// aggSource reports whether sp is the source an aggregate's contributions
// are copied from onto piece pp's NEW shard: the first source of the
// shard's first piece.
func (r *Reshard) aggSource(pp *PieceProgress, sp *SourceProgress) bool {
	for i := range r.pr.Pieces {
		if r.pr.Pieces[i].To == pp.To {
			return &r.pr.Pieces[i] == pp && len(pp.Sources) > 0 && &pp.Sources[0] == sp
		}
	}
	return false
}

// rebuildCopiedGroups makes, on every NEW shard that received pieces of
// an aggregate, the group rows and distinct values of its range from the
// contributions copied there, once every piece is copied and again on a
// rerun (sinks.RebuildAggregate gives the same rows each time). Group
// rows copied from several OLD shards, each at its own offsets, would not
// be the function of the copied contributions that the fill's version
// checks assume: a change between two sources' offsets is in the
// contributions copied from the later one, so the fill skips it, but not
// in the groups copied from the earlier one. Only servers new to the
// projection receive pieces (RefuseServers): nothing else writes there
// until the fill projector starts, after this.
func (r *Reshard) rebuildCopiedGroups(ctx context.Context) error {
	if r.p.Aggregation == nil {
		return nil
	}
	for _, to := range r.piecesTo() {
		dst := r.o.New.Shards[to]
		if err := dst.RebuildAggregate(ctx, r.p, &dst.Range); err != nil {
			return fmt.Errorf("shard %s of sink %s: %w", dst.Range.Text, r.o.New.Name, err)
		}
	}
	r.o.Log.Info("reshard: rebuilt the groups from the copied contributions", "projection", r.p.Name)
	return nil
}

// piecesTo is each NEW shard that receives pieces, once, in the order of
// its first piece.
func (r *Reshard) piecesTo() []int {
	var to []int
	for _, pc := range r.pieces {
		if !slices.Contains(to, pc.To) {
			to = append(to, pc.To)
		}
	}
	return to
}

// newOnly reports whether NEW shard to is on a server no OLD shard uses.
func (r *Reshard) newOnly(to int) bool {
	return !slices.Contains(r.o.OldServers, r.o.NewServers[to])
}

// copyState copies p's tombstones, truncation floors and join state from
// src to dst, each version-guarded, and to a server new to p (newOnly)
// also its children's state. A server that keeps an OLD shard has that
// state already, kept by the live projector, which is the only writer
// there that refreshes the arrays of the rows it serves: state copied in
// ahead of it would make it miss a child's old parent (it finds the state
// already moved and refreshes only the new one).
func (r *Reshard) copyState(ctx context.Context, src, dst sinks.Shard, newOnly bool) error {
	tables := []struct {
		ts    sinks.TableScan
		guard string
	}{
		{sinks.TableScan{Table: "_readside_tombstones", Key: []string{"projection", "key_text"}, Where: "projection = ?", Args: []any{r.p.Name}}, "version"},
		{sinks.TableScan{Table: "_readside_truncations", Key: []string{"projection"}, Where: "projection = ? OR projection LIKE ?", Args: []any{r.p.Name, r.p.Name + "#join%"}}, "version"},
	}
	for _, j := range r.p.Joins {
		var key []string
		for _, on := range j.On {
			key = append(key, "k_"+on.Parent)
		}
		tables = append(tables, struct {
			ts    sinks.TableScan
			guard string
		}{sinks.TableScan{Table: j.StateTable(r.p), Key: key}, "_rs_version"})
		if r.p.FanOut == projections.FanOutBackground {
			// The parents whose rows on the old shard still wait for their
			// copy: the new shard's projector copies them there.
			tables = append(tables, struct {
				ts    sinks.TableScan
				guard string
			}{sinks.TableScan{Table: j.PendingTable(r.p), Key: key}, "marked_at"})
		}
	}
	if newOnly {
		for _, sc := range sinks.ChildStateCopies(r.p) {
			tables = append(tables, struct {
				ts    sinks.TableScan
				guard string
			}{sc.Scan, sc.Version})
		}
	}
	for _, t := range tables {
		var after []any
		for {
			c, err := src.ScanChunk(ctx, t.ts, after, r.o.ChunkRows)
			if err != nil {
				return fmt.Errorf("shard %s of sink %s: %w", src.Range.Text, r.o.Old.Name, err)
			}
			if c.Len() == 0 {
				break
			}
			after = c.Last()
			if err := dst.UpsertChunk(ctx, t.ts.Table, t.ts.Key, []sinks.Guard{{Version: t.guard}}, c); err != nil {
				return fmt.Errorf("shard %s of sink %s: %w", dst.Range.Text, r.o.New.Name, err)
			}
		}
	}
	return nil
}

// countPieces counts the rows the pieces hold on their NEW shards (how
// many rows a fill from the topics moved).
func (r *Reshard) countPieces(ctx context.Context) (int64, error) {
	var n int64
	done := map[int]bool{}
	for _, pc := range r.pieces {
		if done[pc.To] {
			continue
		}
		done[pc.To] = true
		dst := r.o.New.Shards[pc.To]
		var after []any
		for {
			c, err := dst.ScanChunk(ctx, r.readScan(), after, r.o.ChunkRows)
			if err != nil {
				return n, err
			}
			if c.Len() == 0 {
				break
			}
			after = c.Last()
			for _, id := range c.IDs {
				for _, p := range r.pieces {
					if p.To == pc.To && p.Range.Contains(id) {
						n++
						break
					}
				}
			}
		}
	}
	return n, nil
}

// refreshCopiedChildren rebuilds, on every NEW shard that received
// pieces, the children arrays of the piece rows from the child state of
// its server, once every piece is copied. A copied row carries the array
// its source shard computed from that shard's state, which need not be
// the state on the NEW server (copied from several shards, each at its own
// offsets, or kept by the live projector there), and no later change
// refreshes a parent whose children do not change again. Each chunk of
// links is refreshed as a batch refreshes them, under their link locks, so
// a live batch on the same server that writes one of their children
// meanwhile either commits first or refreshes after (the row exists by
// then). A rerun refreshes again, harmlessly.
func (r *Reshard) refreshCopiedChildren(ctx context.Context) error {
	if len(r.p.Children) == 0 {
		return nil
	}
	for _, to := range r.piecesTo() {
		var mine []Piece
		for _, o := range r.pieces {
			if o.To == to {
				mine = append(mine, o)
			}
		}
		if err := r.refreshShardChildren(ctx, r.o.New.Shards[to], mine); err != nil {
			return fmt.Errorf("refreshing the children arrays of %s on shard %s of sink %s: %w", r.p.Table, r.o.New.Shards[to].Range.Text, r.o.New.Name, err)
		}
	}
	return nil
}

// refreshShardChildren refreshes the arrays of dst's rows in pieces.
func (r *Reshard) refreshShardChildren(ctx context.Context, dst sinks.Shard, pieces []Piece) error {
	ts := r.readScan()
	what := "refreshing the children arrays of " + r.p.Table + " on shard " + dst.Range.Text
	var after []any
	var n int64
	for {
		c, err := dst.ScanChunk(ctx, ts, after, r.o.ChunkRows)
		if err != nil {
			return err
		}
		if c.Len() == 0 {
			r.o.Progress.Count(what, n, n, "rows", true)
			return nil
		}
		after = c.Last()
		c.Keep(func(i int) bool { return r.p.Replicated || Contains(pieces, c.IDs[i]) })
		for ci, ch := range r.p.Children {
			links := childLinks(c, ch)
			for start := 0; start < len(links); start += lookupKeys {
				if err := dst.RefreshChildLinks(ctx, r.p, ci, links[start:min(start+lookupKeys, len(links))]); err != nil {
					return err
				}
			}
		}
		n += int64(c.Len())
		r.o.Progress.Count(what, n, max(n, r.pr.RowsCopied), "rows", false)
	}
}

// childLinks are the distinct links of children entry ch in c's rows
// (the rows' values of its on columns; none with a NULL: such a row has
// no children).
func childLinks(c *sinks.Chunk, ch *projections.Children) [][]any {
	idx := make([]int, len(ch.On))
	for k, on := range ch.On {
		idx[k] = slices.IndexFunc(c.Columns, func(col string) bool { return strings.EqualFold(col, on.Read) })
		if idx[k] < 0 {
			return nil
		}
	}
	seen := map[string]bool{}
	var out [][]any
	for _, row := range c.Rows {
		link := make([]any, len(idx))
		null := false
		for k, i := range idx {
			link[k] = row[i]
			null = null || row[i] == nil
		}
		if t := rowText(nil, link); !null && !seen[t] {
			seen[t] = true
			out = append(out, link)
		}
	}
	return out
}
