package sinks

// Applying an aggregate projection's contributions, in the batch's
// transaction (docs/design/aggregates.md, "Aggregates"):
//
//  1. read the stored contributions of the batch's source keys, locking
//     them (in key order); a key not stored locks nothing under READ
//     COMMITTED. The keys of insert events are not read: guessed new,
//     they go to step 3's INSERT (aggregate_guess.go);
//  2. for each change newer than its stored one, withdraw the old
//     contribution from the old group and add the new one to the new
//     group, coalesced per group;
//  3. write the new contributions: an upsert of the stored ones, a plain
//     INSERT of the first ones. Two transactions that both read a key as
//     never seen meet at that INSERT: the second fails on the duplicate
//     key and is retried (contention), and then reads the first's row.
//     A consistent commit holds them and writes each source row's last
//     one at its end (aggregate_deferred.go);
//  4. apply the group deltas in one multi-row upsert (counts and sums
//     added in SQL, exact; a MIN or MAX kept as LEAST or GREATEST of the
//     stored one and the furthest added, when nothing further left),
//     remove groups with no rows left, and set the other MINs and MAXs
//     (from the contributions, through their index) and AVG (from the
//     hidden sum and count) of the touched groups — in statements after
//     the upsert has locked their rows, so two transactions touching one
//     group take turns, and the second starts from what the first
//     committed.

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// contributions applies an aggregate projection's contributions: each one
// only when newer than the stored contribution of its source row, the
// difference to the old and new groups coalesced per group, groups with
// no rows left removed (docs/design/aggregates.md, "Aggregates").
func (a *applier) contributions(cs []projections.Contribution) error {
	if len(cs) == 0 || a.p.Aggregation == nil {
		return nil
	}
	live, truncateAt := splitTruncations(cs)
	if truncateAt > 0 {
		// The rebuild starts from the contributions, which already hold
		// what the deltas summed so far would add.
		if a.deferred != nil {
			if err := a.writeDeferred(); err != nil {
				return err
			}
		}
		if err := a.truncateAggregate(truncateAt); err != nil {
			return err
		}
		a.readEveryKeyAfterTruncation()
	}
	if len(live) == 0 {
		return nil
	}
	// One contribution per source key (Build's batches already are): two
	// first contributions of one key would meet at their own INSERT and
	// be retried without end.
	kept := projections.CoalesceContributions(live)
	slices.SortFunc(kept, func(x, y projections.Contribution) int { return strings.Compare(x.SourceKey, y.SourceKey) })
	st := a.st.agg
	// In a consistent commit, the keys an earlier chunk changed are known
	// already (aggregate_deferred.go) and not read again.
	var pending *pendingContributions
	toRead := kept
	if a.deferred != nil {
		pending = &a.deferred.pending
		toRead = slices.DeleteFunc(slices.Clone(kept), func(c projections.Contribution) bool { return pending.lookup(c.SourceKey) != nil })
	}
	stored, err := a.storedContributions(toRead)
	if err != nil {
		return err
	}
	floor := stored[""].version
	var joined map[string][]projections.Value
	if joinedAgg(a.p) {
		if joined, err = a.completeJoinedGroups(kept); err != nil {
			return err
		}
	}
	ds := newDeltas(a.p.Aggregation)
	var writes, inserts [][]any
	for _, c := range kept {
		old, seen := stored[c.SourceKey]
		insert := !seen
		if p := pending.lookup(c.SourceKey); p != nil {
			old, insert = p.stored, p.insert
		}
		if c.Version <= old.version || c.Version <= floor {
			a.skipped++
			continue
		}
		if old.group != nil && complete(old.group) && a.localGroup(old.group) {
			if err := ds.add(old.group, old.values, -1, c.Version); err != nil {
				return err
			}
		}
		group, err := a.addContribution(c, joined, ds)
		if err != nil {
			return err
		}
		if pending != nil {
			a.putPending(c, insert)
			continue
		}
		row := a.contributionRow(c.SourceKey, c.Version, group, c.Values, c.Parents)
		if insert {
			inserts = append(inserts, row)
		} else {
			writes = append(writes, row)
		}
	}
	if pending != nil && len(pending.order) > maxPendingContributions {
		if err := a.writeOldestPending(len(pending.order) - maxPendingContributions); err != nil {
			return err
		}
	}
	a.firstContributions = len(inserts) > 0
	if err := a.execRows(&st.insert, inserts); err != nil {
		return fmt.Errorf("writing the first contributions of %s: %w", a.p.Name, err)
	}
	if err := a.execRows(&st.write, writes); err != nil {
		return fmt.Errorf("writing the contributions of %s: %w", a.p.Name, err)
	}
	if joinedAgg(a.p) {
		// regroup adds its moves and writes the groups once.
		a.deltas = ds
		return nil
	}
	if a.deferred != nil {
		return a.deferDeltas(ds)
	}
	return a.applyDeltas(ds)
}

// splitTruncations separates the truncation markers in cs from the
// contributions, returning the latest truncation's version (0: none).
func splitTruncations(cs []projections.Contribution) (live []projections.Contribution, truncateAt uint64) {
	live = make([]projections.Contribution, 0, len(cs))
	for _, c := range cs {
		if c.Truncate {
			truncateAt = max(truncateAt, c.Version)
		} else {
			live = append(live, c)
		}
	}
	return live, truncateAt
}

// addContribution adds c, a contribution newer than the stored one, to its
// group in ds when this shard holds that group, and returns the group its
// row stores (nil: c is in no group). joined holds the groups completed
// from the join state, by source key (completeJoinedGroups).
func (a *applier) addContribution(c projections.Contribution, joined map[string][]projections.Value, ds *deltas) ([]projections.Value, error) {
	if c.Group == nil {
		return nil, nil
	}
	// Every shard stores the group and values; only the group's own
	// shard adds them to it (docs/design/aggregates.md).
	group, done := c.Group, false
	if g, ok := joined[c.SourceKey]; ok {
		group, done = g, true
	}
	switch {
	case complete(group):
		if !a.local(c.KeyspaceID) {
			break
		}
		if err := ds.add(group, c.Values, 1, c.Version); err != nil {
			return nil, err
		}
	case !done:
		// Its joined group columns come from the join state
		// (aggregate_joined.go).
		a.regroupKeys = append(a.regroupKeys, c.SourceKey)
	}
	return group, nil
}

// contributionRow is the contributions table's row of a source row: its
// key and version, its group (nil: none, the row is withdrawn), the
// stored aggregates' values and its links to joined parents.
func (a *applier) contributionRow(key string, version uint64, group, values []projections.Value, parents []projections.ParentRef) []any {
	row := []any{[]byte(key), version}
	if group == nil {
		return a.withdrawnRow(row)
	}
	row = appendValues(row, group)
	for i, x := range a.p.Aggregation.Aggregates {
		if x.Stored() {
			row = append(row, &values[i])
		}
	}
	return appendLinks(row, a.p, parents)
}

// storedContributions reads the contributions the sink has for kept's
// source keys but the First ones it guesses are new (aggregate_guess.go),
// and the truncation floor under the key "" (no record key is empty): it
// comes with the first read, one round trip less per batch, or alone when
// no key is read.
func (a *applier) storedContributions(kept []projections.Contribution) (map[string]storedContribution, error) {
	st := a.st.agg
	stored := map[string]storedContribution{}
	read := make([]projections.Contribution, 0, len(kept))
	for _, c := range kept {
		if !a.unreadFirst(c) {
			read = append(read, c)
		}
	}
	a.guess.guessed = len(read) < len(kept)
	if err := a.shareTruncation(a.p.Name); err != nil {
		return nil, err
	}
	if len(read) == 0 {
		if err := a.readContributions(st.floor, []any{a.p.Name}, stored); err != nil {
			return nil, fmt.Errorf("reading the truncation floor of %s: %w", a.p.Name, err)
		}
		floorRead()
		return stored, nil
	}
	for i, sp := range cut(len(read), chunk, func(i int) int { return len(read[i].SourceKey) + 9 }, a.limit) {
		part := read[sp[0]:sp[1]]
		args := make([]any, len(part), len(part)+1)
		for j, c := range part {
			args[j] = []byte(c.SourceKey)
		}
		q := st.read.text(len(part))
		if i == 0 {
			q, args = st.readFirst.text(len(part)), append(args, a.p.Name)
		}
		if err := a.readContributions(q, args, stored); err != nil {
			return nil, fmt.Errorf("reading the contributions of %s: %w", a.p.Name, err)
		}
	}
	a.noteStoredFirst(kept, stored)
	floorRead()
	return stored, nil
}

// withdrawnRow completes the contribution row (key and version so far) of
// a source row in no group: deleted or filtered out. The version still
// refuses older events.
func (a *applier) withdrawnRow(row []any) []any {
	for range a.p.Key {
		row = append(row, nil)
	}
	for _, x := range a.p.Aggregation.Aggregates {
		if x.Counts() && x.Stored() {
			row = append(row, 0)
		} else if x.Stored() {
			row = append(row, nil)
		}
	}
	return appendLinks(row, a.p, nil)
}

// local reports whether a group with keyspace id ks lives on this shard.
func (a *applier) local(ks uint64) bool { return a.shard == nil || a.shard.Contains(ks) }

// localGroup reports whether a group read from the sink lives on this
// shard: the keyspace id of its shard_by value (the first group column),
// as the projector computes it from the event (the server's text of the
// value, or its bytes: projections.ShardValue).
func (a *applier) localGroup(group []projections.Value) bool {
	if a.shard == nil || a.p.ShardBy == "" {
		return true
	}
	return a.shard.Contains(keyspace.ID(projections.ShardValue(group[0], 0)))
}

// storedContribution is a source row's contribution as the sink has it.
type storedContribution struct {
	version uint64
	group   []projections.Value // nil: none
	values  []projections.Value // per aggregate
}

// readContributions reads stored contributions into out.
func (a *applier) readContributions(query string, args []any, out map[string]storedContribution) error {
	rows, err := a.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	ag := a.p.Aggregation
	cs := newCells(types)
	raw, value, cells := cs.dest, cs.value, cs.bytes
	for rows.Next() {
		var version uint64
		raw[1] = &version
		if err := rows.Scan(raw...); err != nil {
			return err
		}
		s := storedContribution{version: version}
		k := len(a.p.Key)
		if cells[2] != nil {
			s.group = make([]projections.Value, k)
			for i := range k {
				s.group[i] = value(2 + i)
			}
			s.values = make([]projections.Value, len(ag.Aggregates))
			col := 2 + k
			for i, x := range ag.Aggregates {
				if !x.Stored() {
					s.values[i] = projections.ValueOf("1")
					continue
				}
				s.values[i] = value(col)
				col++
			}
		}
		out[string(cells[0])] = s
	}
	return rows.Err()
}

// execRows runs a multi-row statement over rows, in spans of at most
// chunk rows and about a.limit bytes.
func (a *applier) execRows(stmt *multiRow, rows [][]any) error {
	return a.execRowsOf(stmt, rows, chunk)
}

// execRowsOf is execRows with spans of at most most rows.
func (a *applier) execRowsOf(stmt *multiRow, rows [][]any, most int) error {
	for _, sp := range cut(len(rows), most, func(i int) int { return argBytes(rows[i]) }, a.limit) {
		n := 0
		for _, r := range rows[sp[0]:sp[1]] {
			n += len(r)
		}
		args := make([]any, 0, n)
		for _, r := range rows[sp[0]:sp[1]] {
			args = append(args, r...)
		}
		if err := a.exec(stmt.text(sp[1]-sp[0]), args...); err != nil {
			return err
		}
	}
	return nil
}

// applyDeltas writes the coalesced group deltas, removes the groups left
// empty and recomputes MIN, MAX and AVG of the touched groups.
func (a *applier) applyDeltas(ds *deltas) error {
	if len(ds.order) == 0 {
		return nil
	}
	// One order for every transaction: two that share groups lock their
	// rows in the same order and queue instead of deadlocking.
	slices.Sort(ds.order)
	st := a.st.agg
	ag := a.p.Aggregation
	moves, moved, err := a.distinctMoves(ds)
	if err != nil {
		return err
	}
	rows := make([][]any, 0, len(ds.order))
	groups := make([][]any, 0, len(ds.order))
	var shrunk [][]any
	// dives are, per MIN or MAX aggregate, the groups its recompute reads
	// from the contributions.
	dives := make([][][]any, len(ag.Aggregates))
	for _, k := range ds.order {
		d := ds.by[k]
		// The distinct counts' move, when the server spells the group as
		// Go does (else it takes an upsert of its own, below).
		gt := groupText(d.group)
		m := moves[gt]
		delete(moves, gt)
		row := appendValues(nil, d.group)
		groups = append(groups, appendValues(nil, d.group))
		if d.rows <= 0 {
			// Only these can be left empty: a group holds as many rows as
			// contributions name it (never fewer than 0), and one that
			// gains rows keeps at least those.
			shrunk = append(shrunk, groups[len(groups)-1])
		}
		for i, x := range ag.Aggregates {
			dive := false
			if e := d.extremes[i]; e != nil && e.needsDive(ds.orders[i], x.Func == projections.AggMax) {
				dive = true
				// The furthest withdrawn, when Go's order of the values
				// is the server's: a group whose extreme lies strictly
				// beyond it keeps that extreme (recomputeExtreme).
				var withdrawn any
				if e.withdraws && ds.orders[i] != projections.OrderUnknown {
					withdrawn = &e.withdrawn
				}
				dives[i] = append(dives[i], append(appendValues(nil, d.group), withdrawn))
			}
			switch {
			case extreme(x) && !dive && d.extremes[i].adds:
				// The delta keeps the extreme: LEAST or GREATEST of the
				// stored one and the furthest added.
				row = append(row, &d.extremes[i].added)
			case x.Distinct():
				row = appendDistinctDeltas(row, x, i, m)
			case x.Counts():
				row = append(row, d.counts[i])
			case sums(x):
				var sum any
				if d.nonNull[i] > 0 || d.sums[i].Sign() != 0 {
					sum = d.sums[i].String()
				}
				if x.Func == projections.AggAvg {
					row = append(row, nil, d.nonNull[i], sum)
				} else {
					row = append(row, sum, d.nonNull[i])
				}
			default:
				row = append(row, nil)
			}
		}
		rows = append(rows, append(row, d.rows, d.version))
	}
	// Groups the server returned in another spelling (a _ci collation, a
	// number's format): their distinct counts' moves by that spelling.
	var others [][]any
	for _, k := range moved {
		if m := moves[k]; m != nil {
			others = append(others, distinctMoveRow(ag, m))
		}
	}
	rows = append(rows, others...)
	if err := a.execRows(&st.delta, rows); err != nil {
		return fmt.Errorf("applying group deltas to %s: %w", a.p.Table, err)
	}
	if err := a.execRows(&st.deleteEmpty, shrunk); err != nil {
		return fmt.Errorf("removing empty groups of %s: %w", a.p.Table, err)
	}
	for i := range st.recomputeExtremes {
		if err := a.execRows(&st.recomputeExtremes[i], dives[i]); err != nil {
			return fmt.Errorf("recomputing %s of %s: %w", ag.Aggregates[i].Text, a.p.Table, err)
		}
	}
	if st.recomputeAvg.head != "" {
		if err := a.execRows(&st.recomputeAvg, groups); err != nil {
			return fmt.Errorf("recomputing AVG of %s: %w", a.p.Table, err)
		}
	}
	return nil
}

// truncateAggregate records a truncation of the source table at version
// at, withdraws every older contribution and rebuilds the groups from
// the contributions left (rare: a full rebuild is fine).
func (a *applier) truncateAggregate(at uint64) error {
	st := a.st.agg
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{a.st.truncation, []any{a.p.Name, at}},
		{st.withdraw, []any{at, at}},
		{st.clearGroups, nil},
		{st.rebuildGroups, nil},
	} {
		if err := a.exec(stmt.q, stmt.args...); err != nil {
			return fmt.Errorf("truncating aggregate %s: %w", a.p.Name, err)
		}
	}
	if err := a.rebuildDistinct(); err != nil {
		return err
	}
	if err := a.dropForeignGroups(); err != nil {
		return fmt.Errorf("truncating aggregate %s: %w", a.p.Name, err)
	}
	// The groups are new rows: each join's state is copied in afresh.
	for _, fill := range st.fillJoins {
		if err := a.exec(fill); err != nil {
			return fmt.Errorf("truncating aggregate %s: %w", a.p.Name, err)
		}
	}
	return nil
}

// dropForeignGroups removes the group rows and distinct values a rebuild
// from the contributions made for groups of other shards: every shard
// stores every contribution's group, and MySQL cannot compute a keyspace
// id, so the rebuild makes them all and Go picks those to drop by their
// shard_by value.
func (a *applier) dropForeignGroups() error {
	if a.shard == nil || a.p.ShardBy == "" {
		return nil
	}
	rows, err := a.query("SELECT DISTINCT " + q(a.p.Key[0]) + " FROM " + q(a.p.Table))
	if err != nil {
		return err
	}
	vals, err := scanValues(rows)
	if err != nil {
		return err
	}
	var foreign [][]any
	for _, v := range vals {
		if !a.localGroup(v) {
			foreign = append(foreign, []any{&v[0]})
		}
	}
	tables := []string{"DELETE FROM " + q(a.p.Table) + " WHERE "}
	cols := []string{a.p.Key[0]}
	for _, x := range a.p.Aggregation.Aggregates {
		if x.Distinct() {
			tables = append(tables, "DELETE FROM "+q(a.p.DistinctTable(x.Column))+" WHERE ")
			cols = append(cols, projections.GroupColumn(a.p.Key[0]))
		}
	}
	for i, head := range tables {
		del := keyIn(a.p, head, []string{q(cols[i])}, "")
		if err := a.execRows(&del, foreign); err != nil {
			return err
		}
	}
	return nil
}

// deltas are a batch's changes per group (applyDeltas writes them in key order).
type deltas struct {
	ag     *projections.Aggregation
	orders []projections.ValueOrder // per aggregate: Aggregation.Order
	by     map[string]*delta
	order  []string
	// distinct are the count(distinct) reference count changes
	// (aggregate_distinct.go).
	distinct *distinctDeltas
}

// delta is one group's change: counts and sums to add (negative to
// withdraw), exact.
type delta struct {
	group   []projections.Value
	rows    int64
	counts  []int64
	nonNull []int64
	sums    []*decimal
	// extremes are, per MIN or MAX aggregate (nil for the others), the
	// most extreme value added and withdrawn.
	extremes []*extremeDelta
	version  uint64
}

// extremeDelta is what a batch does to one group's MIN or MAX: the
// furthest value (lowest for MIN, highest for MAX) it adds and the
// furthest it withdraws, non-NULL ones only.
type extremeDelta struct {
	added, withdrawn projections.Value
	adds, withdraws  bool
}

// needsDive reports whether the group's new extreme must be read from its
// contributions. Without withdrawals it is the old one or the furthest
// added; with them too as long as the furthest added is at least as far
// as the furthest withdrawn (what left is then no further than what
// came). Values only the server can order always dive.
func (e *extremeDelta) needsDive(order projections.ValueOrder, isMax bool) bool {
	if order == projections.OrderUnknown {
		return e.adds || e.withdraws
	}
	if !e.withdraws {
		return false
	}
	return !e.adds || beyond(order, isMax, e.withdrawn, e.added)
}

// beyond reports v further than cur for a MIN (lower) or MAX (higher);
// never for values only the server orders (needsDive decides for them).
func beyond(order projections.ValueOrder, isMax bool, v, cur projections.Value) bool {
	if order == projections.OrderUnknown {
		return false
	}
	c := compareValues(order, orderText(v), orderText(cur))
	return (isMax && c > 0) || (!isMax && c < 0)
}

// orderText is v's text for compareValues: a BIT's number as digits.
func orderText(v projections.Value) []byte {
	if v.Kind() == projections.UintValue {
		return strconv.AppendUint(nil, v.Uint(), 10)
	}
	return v.Bytes()
}

// compareValues orders two values' texts as order says.
func compareValues(order projections.ValueOrder, x, y []byte) int {
	if order == projections.OrderNumeric {
		if a, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			if b, err := strconv.ParseInt(string(y), 10, 64); err == nil {
				return cmp.Compare(a, b)
			}
		}
		a, b := &decimal{u: new(big.Int)}, &decimal{u: new(big.Int)}
		if a.add(string(x), 1) != nil || b.add(string(y), 1) != nil {
			return strings.Compare(string(x), string(y)) // not reached: the values are typed numbers
		}
		return a.cmp(b)
	}
	return strings.Compare(string(x), string(y))
}

func newDeltas(ag *projections.Aggregation) *deltas {
	ds := &deltas{ag: ag, by: map[string]*delta{}, orders: make([]projections.ValueOrder, len(ag.Aggregates)), distinct: newDistinctDeltas(ag)}
	for i := range ag.Aggregates {
		ds.orders[i] = ag.Order(i)
	}
	return ds
}

// add adds (sign 1) or withdraws (sign -1) a contribution's values from
// its group.
func (ds *deltas) add(group, values []projections.Value, sign int64, version uint64) error {
	k := valuesText(group)
	d := ds.by[k]
	if d == nil {
		n := len(ds.ag.Aggregates)
		d = &delta{group: group, counts: make([]int64, n), nonNull: make([]int64, n), sums: make([]*decimal, n), extremes: make([]*extremeDelta, n)}
		for i, x := range ds.ag.Aggregates {
			if sums(x) {
				d.sums[i] = &decimal{u: new(big.Int)}
			}
			if extreme(x) {
				d.extremes[i] = &extremeDelta{}
			}
		}
		ds.by[k] = d
		ds.order = append(ds.order, k)
	}
	d.rows += sign
	d.version = max(d.version, version)
	for i, x := range ds.ag.Aggregates {
		v := &values[i]
		switch {
		case x.Distinct():
			ds.distinct.add(i, k, group, *v, sign)
		case x.Counts():
			if v.Kind() != projections.NullValue && string(v.Bytes()) != "0" {
				d.counts[i] += sign
			}
		case sums(x):
			if v.Kind() == projections.NullValue {
				continue
			}
			d.nonNull[i] += sign
			if err := d.sums[i].add(string(v.Bytes()), sign); err != nil {
				return fmt.Errorf("aggregate %s: %w", x.Column, err)
			}
		case extreme(x):
			if v.Kind() == projections.NullValue {
				continue
			}
			e, isMax := d.extremes[i], x.Func == projections.AggMax
			if sign > 0 {
				if !e.adds || beyond(ds.orders[i], isMax, *v, e.added) {
					e.added, e.adds = *v, true
				}
			} else if !e.withdraws || beyond(ds.orders[i], isMax, *v, e.withdrawn) {
				e.withdrawn, e.withdraws = *v, true
			}
		}
	}
	return nil
}

// decimal is an exact decimal: u / 10^scale.
type decimal struct {
	u     *big.Int
	scale int
	// small is a sum of integers not yet added to u (|small| < 2^62):
	// most values are integers of a BIGINT or INT column, and adding them
	// as int64 costs no allocation.
	small int64
}

// add adds sign × the decimal text s.
func (d *decimal) add(s string, sign int64) error {
	if len(s) <= 18 && !strings.Contains(s, ".") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil { // |n| < 10^18 < 2^60
			if d.small >= 1<<61 || d.small <= -(1<<61) {
				d.fold()
			}
			d.small += sign * n
			return nil
		}
	}
	d.fold()
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, _ := strings.Cut(digits, ".")
	if len(frac) > d.scale {
		d.u.Mul(d.u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac)-d.scale)), nil))
		d.scale = len(frac)
	}
	frac += strings.Repeat("0", d.scale-len(frac))
	x, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return fmt.Errorf("%q is not a decimal number", s)
	}
	if neg != (sign < 0) {
		x.Neg(x)
	}
	d.u.Add(d.u, x)
	return nil
}

// fold adds small to u.
func (d *decimal) fold() {
	if d.small == 0 {
		return
	}
	x := big.NewInt(d.small)
	if d.scale > 0 {
		x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.scale)), nil))
	}
	d.u.Add(d.u, x)
	d.small = 0
}

// cmp compares two decimals by value.
func (d *decimal) cmp(o *decimal) int {
	d.fold()
	o.fold()
	x, y := new(big.Int).Set(d.u), new(big.Int).Set(o.u)
	if d.scale < o.scale {
		x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(o.scale-d.scale)), nil))
	} else if o.scale < d.scale {
		y.Mul(y, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.scale-o.scale)), nil))
	}
	return x.Cmp(y)
}

// Sign is the sign of the value.
func (d *decimal) Sign() int {
	d.fold()
	return d.u.Sign()
}

// String is the value's text with its scale.
func (d *decimal) String() string {
	d.fold()
	s := new(big.Int).Abs(d.u).String()
	if d.scale > 0 {
		if len(s) <= d.scale {
			s = strings.Repeat("0", d.scale-len(s)+1) + s
		}
		s = s[:len(s)-d.scale] + "." + s[len(s)-d.scale:]
	}
	if d.u.Sign() < 0 {
		s = "-" + s
	}
	return s
}
