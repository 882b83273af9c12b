package verify

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// RepairResult says what --repair did.
type RepairResult struct {
	// SnapshotRequests were sent to the tailer (source rows re-published
	// as r events, at most 200 keys each).
	SnapshotRequests int `json:"snapshot_requests"`
	// Published are read keys whose source rows were re-published.
	Published int `json:"published"`
	// ParentKeys are parent rows re-published because copied columns
	// differed.
	ParentKeys int `json:"parent_keys"`
	// Deleted are sink rows removed directly: extra rows whose source row
	// does not exist, and copies on the wrong shard (once the row is on its
	// home shard, or when no shard should hold it).
	Deleted int `json:"deleted"`
	// ChildParents are parent rows whose child rows (children entries)
	// were re-published because their array or count differed.
	ChildParents int `json:"child_parents"`
	// Rebuilt are aggregate group rows rebuilt from their contributions
	// (aggregate_repair.go); Withdrawn the contributions, or child states
	// (children.go), of source rows that no longer exist.
	Rebuilt   int `json:"rebuilt,omitempty"`
	Withdrawn int `json:"withdrawn,omitempty"`
	// Remaining are keys still differing when the repair stopped waiting.
	Remaining int     `json:"remaining"`
	Seconds   float64 `json:"seconds"`
}

// Requester asks the tailer to snapshot the rows of table (db.table)
// matching where (cdc.RequestSnapshot).
type Requester func(ctx context.Context, table, where string) error

const keysPerRequest = 200

var integer = regexp.MustCompile(`^-?[0-9]+$`)

// Repair fixes the differences of rep, then re-verifies those keys until
// they are equal or wait runs out. Rows are never written on the sink
// directly: the source rows are re-published as r events (new versions,
// through the tailer's snapshot path) and the projector applies them
// under its usual rules. Only what an r event cannot express is deleted
// here, version-guarded: a row whose source row does not exist, and a
// copy on a shard outside its key range — the latter only after the row
// is on its home shard (a move: re-publish, then delete).
func (v *Verifier) Repair(ctx context.Context, rep *Report, request Requester, wait time.Duration) (*RepairResult, error) {
	if v.p.Aggregation != nil {
		return v.repairAggregate(ctx, rep, request, wait)
	}
	res := &RepairResult{}
	start := time.Now()
	var publish []Key
	children := make([]map[string]bool, len(v.p.Children))
	for i := range children {
		children[i] = map[string]bool{}
	}
	links := map[int][][]string{}
	seen := map[string]bool{}
	var keys []Key
	for _, d := range rep.diffs {
		for i, l := range v.childLinks(d) {
			if w := v.childWhere(i, l); !children[i][w] {
				children[i][w] = true
				links[i] = append(links[i], l)
			}
		}
		if !seen[d.key.text()] {
			seen[d.key.text()] = true
			keys = append(keys, d.key)
			if d.publish {
				publish = append(publish, d.key)
			}
		}
	}
	// Deleted at once: rows whose source row does not exist, and misplaced
	// copies whose key has its copy on its home shard already, or is not
	// wanted at all. A misplaced copy that is its key's only copy is moved:
	// the row is re-published (its home shard gets it at a new version)
	// and the copy deleted only once the home shard holds the row, so a
	// crash at any point leaves the row on at least one shard.
	for _, d := range rep.diffs {
		if (d.Kind == "misplaced" && !d.publish) || (d.Kind == "extra" && !d.srcExists) {
			n, err := v.deleteCopy(ctx, d)
			if err != nil {
				return nil, err
			}
			res.Deleted += n
		}
	}
	srcCols := make([]string, len(v.p.Key))
	for i := range v.p.Key {
		srcCols[i] = v.p.Columns[i].SQL(q)
	}
	table := v.p.SourceDB + "." + v.p.SourceTbl
	for start := 0; start < len(publish); start += keysPerRequest {
		part := publish[start:min(start+keysPerRequest, len(publish))]
		var ors []string
		for _, k := range part {
			var ands []string
			for i, c := range srcCols {
				ands = append(ands, c+" = "+literal(v.keyKinds[i], k[i]))
			}
			ors = append(ors, "("+strings.Join(ands, " AND ")+")")
		}
		if err := request(ctx, table, strings.Join(ors, " OR ")); err != nil {
			return nil, fmt.Errorf("requesting a snapshot of %d keys of %s: %w", len(part), table, err)
		}
		res.SnapshotRequests++
		res.Published += len(part)
	}
	if err := v.republishParents(ctx, rep.diffs, request, res); err != nil {
		return nil, err
	}
	for i, set := range children {
		c := v.p.Children[i]
		conds := slices.Sorted(maps.Keys(set))
		for start := 0; start < len(conds); start += keysPerRequest {
			part := conds[start:min(start+keysPerRequest, len(conds))]
			if err := request(ctx, c.SourceDB+"."+c.SourceTbl, strings.Join(part, " OR ")); err != nil {
				return nil, fmt.Errorf("requesting a snapshot of the %s rows of %d parents: %w", c.SourceDB+"."+c.SourceTbl, len(part), err)
			}
			res.SnapshotRequests++
			res.ChildParents += len(part)
			// The elements' joined columns come from the children's own
			// parents' state: re-publish those parents too.
			for _, j := range c.Joins {
				where := childJoinWhere(c, j, strings.Join(part, " OR "))
				if err := request(ctx, j.ParentDB+"."+j.ParentTbl, where); err != nil {
					return nil, fmt.Errorf("requesting a snapshot of the %s.%s rows of the %s rows of %d parents: %w", j.ParentDB, j.ParentTbl, c.SourceDB+"."+c.SourceTbl, len(part), err)
				}
				res.SnapshotRequests++
			}
		}
	}
	n, err := v.repairChildState(ctx, links)
	if err != nil {
		return nil, err
	}
	res.Withdrawn += n
	if err := v.recheck(ctx, keys, res, wait); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// recheck re-verifies the repaired keys until they are equal or wait runs
// out, finishing the moves of misplaced rows whose home shard now holds
// them; res.Remaining is what still differs.
func (v *Verifier) recheck(ctx context.Context, keys []Key, res *RepairResult, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		diffs, err := v.compareKeys(ctx, keys)
		if err != nil {
			return err
		}
		moved, err := v.deleteMoved(ctx, diffs)
		if err != nil {
			return err
		}
		res.Deleted += moved
		if moved > 0 {
			continue // re-check at once what the deletes left
		}
		left := map[string]bool{}
		for _, d := range diffs {
			left[d.key.text()] = true
		}
		res.Remaining = len(left)
		if res.Remaining == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}

// republishParents asks for a snapshot of the parent rows whose copied
// columns differ somewhere in diffs: a parent change the projector never
// got is in the join's state, which only a new parent event replaces.
func (v *Verifier) republishParents(ctx context.Context, diffs []Diff, request Requester, res *RepairResult) error {
	parents := make([]map[string]bool, len(v.p.Joins))
	for i := range parents {
		parents[i] = map[string]bool{}
	}
	for _, d := range diffs {
		for _, j := range d.parentDiff {
			if w := v.parentWhere(j, d.srcRow); w != "" {
				parents[j][w] = true
			}
		}
	}
	for j, set := range parents {
		conds := slices.Sorted(maps.Keys(set))
		join := v.p.Joins[j]
		for start := 0; start < len(conds); start += keysPerRequest {
			part := conds[start:min(start+keysPerRequest, len(conds))]
			if err := request(ctx, join.ParentDB+"."+join.ParentTbl, strings.Join(part, " OR ")); err != nil {
				return fmt.Errorf("requesting a snapshot of %d rows of %s.%s: %w", len(part), join.ParentDB, join.ParentTbl, err)
			}
			res.SnapshotRequests++
			res.ParentKeys += len(part)
		}
	}
	return nil
}

// parentWhere selects the parent row of join j that a source row refers
// to ("" when the reference is NULL: no parent to re-publish).
func (v *Verifier) parentWhere(j int, row []*string) string {
	join := v.p.Joins[j]
	var ands []string
	for _, on := range join.On {
		idx := -1
		for i, c := range v.pl.cols {
			if c.Read == on.Read {
				idx = i
			}
		}
		if idx < 0 || idx >= len(row) || row[idx] == nil {
			return ""
		}
		val := *row[idx]
		lit := literal(kText, val)
		if integer.MatchString(val) {
			lit = val
		}
		ands = append(ands, q(on.Parent)+" = "+lit)
	}
	return "(" + strings.Join(ands, " AND ") + ")"
}

// deleteCopy removes one sink row, only if it still has the version the
// comparison saw: a newer write by the projector wins.
func (v *Verifier) deleteCopy(ctx context.Context, d Diff) (int, error) {
	sh := v.sink.Shards[d.shardIdx]
	var conds []string
	for _, k := range v.pl.readKey {
		conds = append(conds, k+" = ?")
	}
	args := append(v.keyKinds.bind(d.key), d.sinkVer)
	r, err := sh.DB().ExecContext(ctx, "DELETE FROM "+q(v.p.Table)+" WHERE "+strings.Join(conds, " AND ")+" AND `_rs_version` = ?", args...)
	if err != nil {
		return 0, fmt.Errorf("deleting a %s row of %s on shard %s: %w", d.Kind, v.p.Table, sh.Range.Text, err)
	}
	n, _ := r.RowsAffected()
	return int(n), nil
}
