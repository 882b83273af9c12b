package reshard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/readside/readside/sinks"
)

// lookupKeys bounds the keys one lookup names (a statement of that many
// key conditions stays small for the server's range optimizer).
const lookupKeys = 500

// checkPieces verifies the moved pieces while both projectors run: every
// row of a piece on its OLD shard must be on the NEW shard with the same
// values, and the NEW shard must hold no other row of the piece. A row
// that differs is read again on both sides, up to CheckRounds times a
// second apart (a change applied to one side and not yet to the other
// settles); one that still differs stops the reshard before any cutover.
func (r *Reshard) checkPieces(ctx context.Context, f *filler) error {
	// First let the fill reach what the topics hold now, so the check
	// compares settled rows.
	ends, err := r.o.Topics.EndOffsets(ctx, r.p)
	if err != nil {
		return err
	}
	if err := f.waitFor(ctx, ends, "catching up "+r.p.Table); err != nil {
		return err
	}
	var checked int64
	for _, pp := range r.pr.Pieces {
		for _, sp := range pp.Sources {
			src, dst := r.o.Old.Shards[sp.From], r.o.New.Shards[pp.To]
			in := func(id uint64) bool {
				return pp.Range.Contains(id) && (r.p.Replicated || src.Range.Contains(id))
			}
			what := fmt.Sprintf("checking %s %s on shard %s", r.p.Table, pp.Text, dst.Range.Text)
			var diffs [][]any
			for _, pass := range []struct{ from, to sinks.Shard }{{src, dst}, {dst, src}} {
				d, n, err := r.comparePass(ctx, pass.from, pass.to, in, func(n int64) {
					if r.p.Aggregation != nil {
						// The copy counted contributions, the check
						// compares group rows: no total to show against.
						r.o.Progress.Show(fmt.Sprintf("%s: %d rows", what, checked+n), false)
						return
					}
					r.o.Progress.Count(what, checked+n, max(2*r.pr.RowsCopied, checked+n), "rows", false)
				})
				if err != nil {
					return err
				}
				checked += n
				diffs = append(diffs, d...)
			}
			if err := r.recheck(ctx, src, dst, in, diffs, pp.Text); err != nil {
				return err
			}
		}
	}
	r.o.Progress.Count("checking the moved pieces", checked, checked, "rows", true)
	return nil
}

// comparePass reads from's rows in the piece chunk by chunk and looks each
// up on to: the keys missing there or different.
func (r *Reshard) comparePass(ctx context.Context, from, to sinks.Shard, in func(uint64) bool, tick func(int64)) ([][]any, int64, error) {
	ts := r.readScan()
	var after []any
	var diffs [][]any
	var n int64
	for {
		c, err := from.ScanChunk(ctx, ts, after, r.o.ChunkRows)
		if err != nil {
			return nil, n, err
		}
		if c.Len() == 0 {
			return diffs, n, nil
		}
		after = c.Last()
		c.Keep(func(i int) bool { return in(c.IDs[i]) })
		if c.Len() == 0 {
			continue
		}
		d, err := r.differing(ctx, c, to, ts)
		if err != nil {
			return nil, n, err
		}
		diffs = append(diffs, d...)
		n += int64(c.Len())
		tick(n)
	}
}

// differing are the keys of c's rows that to lacks or holds otherwise.
func (r *Reshard) differing(ctx context.Context, c *sinks.Chunk, to sinks.Shard, ts sinks.TableScan) ([][]any, error) {
	keys := make([][]any, c.Len())
	for i := range keys {
		keys[i] = c.Key(i)
	}
	have := map[string]string{}
	for start := 0; start < len(keys); start += lookupKeys {
		theirs, err := to.ScanKeys(ctx, ts, keys[start:min(start+lookupKeys, len(keys))])
		if err != nil {
			return nil, err
		}
		for i := range theirs.Rows {
			have[rowText(theirs.Columns, theirs.Key(i))] = r.compared(theirs.Columns, theirs.Rows[i])
		}
	}
	var out [][]any
	for i := range c.Rows {
		if have[rowText(c.Columns, keys[i])] != r.compared(c.Columns, c.Rows[i]) {
			out = append(out, keys[i])
		}
	}
	return out, nil
}

// recheck reads the differing keys again on both sides until they agree,
// or gives up naming a few.
func (r *Reshard) recheck(ctx context.Context, src, dst sinks.Shard, in func(uint64) bool, keys [][]any, piece string) error {
	ts := r.readScan()
	for round := 0; len(keys) > 0; round++ {
		if round == r.o.CheckRounds {
			var sample []string
			for _, k := range keys[:min(len(keys), 5)] {
				sample = append(sample, fmt.Sprint(k...))
			}
			return fmt.Errorf("%d rows of %s in piece %s differ between shard %s of sink %s and shard %s of sink %s after %d re-checks (keys %s): nothing was cut over; run readside verify --projection %s --repair, then rerun the reshard",
				len(keys), r.p.Table, piece, src.Range.Text, r.o.Old.Name, dst.Range.Text, r.o.New.Name, r.o.CheckRounds, strings.Join(sample, "; "), r.p.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		var still [][]any
		for start := 0; start < len(keys); start += lookupKeys {
			part := keys[start:min(start+lookupKeys, len(keys))]
			a, err := src.ScanKeys(ctx, ts, part)
			if err != nil {
				return err
			}
			b, err := dst.ScanKeys(ctx, ts, part)
			if err != nil {
				return err
			}
			side := func(c *sinks.Chunk) map[string]string {
				m := map[string]string{}
				for i := range c.Rows {
					if in(c.IDs[i]) {
						m[rowText(c.Columns, c.Key(i))] = r.compared(c.Columns, c.Rows[i])
					}
				}
				return m
			}
			sa, sb := side(a), side(b)
			for _, k := range part {
				kt := rowText(nil, k)
				if sa[kt] != sb[kt] {
					still = append(still, k)
				}
			}
		}
		keys = still
	}
	return nil
}

// compared renders the columns of a read row that the check compares:
// all of them, but an aggregate's group row without _rs_version, the
// newest change applied to it, which differs between a group rebuilt from
// its contributions (the newest of its current members') and one kept
// change by change (also that of a member that left); its values, counts
// and hidden sums decide.
func (r *Reshard) compared(cols []string, row []any) string {
	if r.p.Aggregation == nil {
		return rowText(cols, row)
	}
	var cs []string
	var vs []any
	for i, c := range cols {
		if !strings.EqualFold(c, "_rs_version") {
			cs, vs = append(cs, c), append(vs, row[i])
		}
	}
	return rowText(cs, vs)
}

// rowText renders values (named by cols, in any column order) so that
// equal rows render equal.
func rowText(cols []string, vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		name := ""
		if cols != nil && len(cols) == len(vals) {
			name = strings.ToLower(cols[i]) + "="
		}
		if v == nil {
			parts[i] = name + "NULL"
		} else {
			parts[i] = name + fmt.Sprintf("%q", fmt.Sprint(v))
		}
	}
	if cols != nil && len(cols) == len(vals) {
		sort.Strings(parts)
	}
	return strings.Join(parts, "\x00")
}
