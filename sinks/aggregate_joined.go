package sinks

// Aggregates whose group columns come from joined parents
// (projections.Aggregation.Joined; docs/design/aggregates.md, "Groups
// from joined parents"). A contribution arrives with its source-side
// group columns and its links (the root joins' parent keys); the joined
// group columns are read here from the join state tables, following the
// via chain. The invariant after every batch: each stored contribution's
// group is what the current state gives for its links (NULL columns: the
// row is in no group). A batch keeps it by regrouping
//
//   - the contributions it writes whose joined columns it could not
//     read from the state before writing them (completeJoinedGroups
//     reads them for the links it has; a link the state returns in other
//     bytes is stored NULL first, then completed here), and
//   - every contribution whose chain of parents, in the state the batch
//     leaves, passes through a parent row the batch changes. A chain that
//     passed through a changed row before the batch still reaches its
//     first changed row afterwards (the rows before it did not change),
//     so these are all the contributions whose group may move.
//
// Regrouping withdraws the stored contribution from its old group and
// adds it to the new one, in the batch's transaction; its version stays
// (it orders the source row's own changes). Parent changes are versioned
// in the state tables, so a duplicated or late parent event changes no
// state and moves nothing. Batches of one such projection take one lock
// first (per shard): a batch that changes a parent takes it exclusively
// and applies alone, since its regroup reads chains of state rows that
// other batches may be changing, and taking turns is what keeps every
// regroup reading the state as it is committed; the batches that change
// no parent share it and apply at once (movesGroups).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// joinedAgg reports whether p is an aggregate with joined group columns.
func joinedAgg(p *projections.Projection) bool {
	return p.Aggregation != nil && len(p.Aggregation.Joined) > 0
}

// joinedStatements are the statements of an aggregate with joined group
// columns.
type joinedStatements struct {
	// lock serializes the projection's batches on this shard; share lets
	// the batches that move no group apply at once (lockJoinedGroups).
	lock, share string
	// byKey, byParent (per join) and all read contributions with the
	// joined group columns the state gives now: of given source keys, of
	// given parent keys of a join, of every row.
	byKey    multiRow
	byParent []multiRow
	all      string
	// byLink, per root join below which joined group columns hang (a zero
	// multiRow for the other joins): those columns as the state gives
	// them, after the join's parent key, for given parent keys;
	// linkGroups are the entries of Aggregation.Joined each one reads,
	// in its select's order.
	byLink     []multiRow
	linkGroups [][]int
	// moveByKey, moveByParent and moveAll store, in the contributions
	// that byKey, byParent and all read, the joined group columns the
	// state gives: regroup's write, which leaves the rest of each row as
	// it is (one statement per read, not the rows read sent back).
	moveByKey    multiRow
	moveByParent []multiRow
	moveAll      string
}

// linkColumns are the contributions table's link columns: per root join,
// per on column, the source row's value (none unless joinedAgg(p)).
func linkColumns(p *projections.Projection) []string {
	if !joinedAgg(p) {
		return nil
	}
	var out []string
	for _, j := range p.Joins {
		if j.Via == nil {
			for _, o := range j.On {
				out = append(out, o.Read)
			}
		}
	}
	return out
}

// joinedStatementsOf renders p's regroup statements (joinedAgg(p)).
func joinedStatementsOf(p *projections.Projection, d dialect) *joinedStatements {
	ag := p.Aggregation
	c := p.ContributionsTable()
	sel := []string{"c.`key_text`", "c.`_rs_version`"}
	for _, g := range p.Key {
		sel = append(sel, exactRead(p, c, "c."+q(projections.GroupColumn(g))))
	}
	for _, a := range ag.Aggregates {
		if a.Stored() {
			sel = append(sel, exactRead(p, c, "c."+q(projections.ContributionColumn(a.Column))))
		}
	}
	for _, g := range ag.Joined {
		sel = append(sel, joinedGroupRead(p, g))
	}
	from := q(p.ContributionsTable()) + " AS c"
	for _, j := range p.Joins {
		var on []string
		for _, o := range j.On {
			child := "c." + q(o.Read)
			if j.Via != nil {
				child = fmt.Sprintf("s%d.%s", j.Via.N, q(stateCol(o.Read)))
			}
			on = append(on, fmt.Sprintf("s%d.%s = %s", j.N, q(stateKey(o.Parent)), child))
		}
		from += fmt.Sprintf(" LEFT JOIN %s AS s%d ON %s", q(j.StateTable(p)), j.N, strings.Join(on, " AND "))
	}
	head := "SELECT " + strings.Join(sel, ", ") + " FROM " + from + " WHERE "
	var sets []string
	for _, g := range ag.Joined {
		sets = append(sets, "c."+q(projections.GroupColumn(p.Key[g.Index]))+" = "+g.SQL(func(c string) string { return fmt.Sprintf("s%d.%s", g.Join.N, q(stateCol(c))) }))
	}
	move := "UPDATE " + from + " SET " + strings.Join(sets, ", ")
	// A move leaves alone what regroup leaves alone: a contribution in no
	// group of this shard (no source-side group: !sourceSide).
	var live []string
	for i, g := range p.Key {
		if ag.JoinedGroupIndex(i) == nil {
			live = append(live, "c."+q(projections.GroupColumn(g))+" IS NOT NULL")
		}
	}
	liveAnd, moveAll := "", move
	if len(live) > 0 {
		liveAnd = " AND " + strings.Join(live, " AND ")
		moveAll += " WHERE " + strings.Join(live, " AND ")
	}
	st := &joinedStatements{
		lock:      "INSERT INTO `_readside_truncations` (projection, version) VALUES (?, 0)" + d.onDuplicate() + "version = version",
		share:     "INSERT IGNORE INTO `_readside_truncations` (projection, version) VALUES (?, 0)",
		byKey:     multiRow{head: head + "c.`key_text` IN (", row: "?", sep: ", ", tail: ")"},
		all:       "SELECT " + strings.Join(sel, ", ") + " FROM " + from,
		moveByKey: multiRow{head: move + " WHERE c.`key_text` IN (", row: "?", sep: ", ", tail: ")" + liveAnd},
		moveAll:   moveAll,
	}
	for _, j := range p.Joins {
		var cols []string
		for _, o := range j.On {
			cols = append(cols, fmt.Sprintf("s%d.%s", j.N, q(stateKey(o.Parent))))
		}
		st.byParent = append(st.byParent, keyIn(p, head, cols, ""))
		st.moveByParent = append(st.moveByParent, keyIn(p, move+" WHERE ", cols, liveAnd))
	}
	st.byLink, st.linkGroups = byLinkStatements(p)
	return st
}

// joinedGroupRead is joined group column g as the join state gives it, as
// a SELECT into Go reads it (exactRead: the value lands in the group
// column, which is a FLOAT when the parent's column is one).
func joinedGroupRead(p *projections.Projection, g projections.JoinedGroup) string {
	ref := g.SQL(func(c string) string { return fmt.Sprintf("s%d.%s", g.Join.N, q(stateCol(c))) })
	if floatColumn(p, p.ContributionsTable(), projections.GroupColumn(p.Key[g.Index])) {
		return "(" + ref + " + 0e0)"
	}
	return ref
}

// rootJoin is the join of p's source table that j hangs below (j itself
// when it has no via).
func rootJoin(j *projections.Join) *projections.Join {
	for j.Via != nil {
		j = j.Via
	}
	return j
}

// byLinkStatements render joinedStatements.byLink and linkGroups: per
// root join, its state LEFT JOINed to the states hanging below it, as
// regroup's reads join them to the contributions.
func byLinkStatements(p *projections.Projection) ([]multiRow, [][]int) {
	ag := p.Aggregation
	stmts, groups := make([]multiRow, len(p.Joins)), make([][]int, len(p.Joins))
	for ri, r := range p.Joins {
		if r.Via != nil {
			continue
		}
		var keys, sel []string
		for _, o := range r.On {
			keys = append(keys, fmt.Sprintf("s%d.%s", r.N, q(stateKey(o.Parent))))
		}
		for gi, g := range ag.Joined {
			if rootJoin(g.Join) == r {
				groups[ri] = append(groups[ri], gi)
				sel = append(sel, joinedGroupRead(p, g))
			}
		}
		if len(sel) == 0 {
			continue
		}
		from := fmt.Sprintf(" FROM %s AS s%d", q(r.StateTable(p)), r.N)
		for _, j := range p.Joins {
			if j == r || rootJoin(j) != r {
				continue
			}
			var on []string
			for _, o := range j.On {
				on = append(on, fmt.Sprintf("s%d.%s = s%d.%s", j.N, q(stateKey(o.Parent)), j.Via.N, q(stateCol(o.Read))))
			}
			from += fmt.Sprintf(" LEFT JOIN %s AS s%d ON %s", q(j.StateTable(p)), j.N, strings.Join(on, " AND "))
		}
		stmts[ri] = keyIn(p, "SELECT "+strings.Join(append(slices.Clone(keys), sel...), ", ")+from+" WHERE ", keys, "")
	}
	return stmts, groups
}

// completeJoinedGroups gives the contributions of kept that are in a group
// their whole group (every shard stores every contribution's): the joined
// group columns as the join state gives them for their links (joinState applied the batch's parent
// changes before), so that each is written once, in its group, and
// regroup need not read it back. A link the state does not return in the
// bytes Go holds (a value the parent's key column converts) is left out:
// that contribution is written without its joined columns and regrouped.
func (a *applier) completeJoinedGroups(kept []projections.Contribution) (map[string][]projections.Value, error) {
	st := a.st.agg.joined
	ag := a.p.Aggregation
	found := make([]map[string][]projections.Value, len(a.p.Joins))
	for ri := range a.p.Joins {
		if len(st.linkGroups[ri]) == 0 {
			continue
		}
		found[ri] = map[string][]projections.Value{}
		seen := map[string]bool{}
		var links [][]projections.Value
		for _, c := range kept {
			if c.Group == nil || ri >= len(c.Parents) || c.Parents[ri].Key == "" {
				continue
			}
			if t := groupText(c.Parents[ri].Values); !seen[t] {
				seen[t] = true
				links = append(links, c.Parents[ri].Values)
			}
		}
		n := len(a.p.Joins[ri].On)
		for start := 0; start < len(links); start += chunk {
			part := links[start:min(start+chunk, len(links))]
			var args []any
			for _, l := range part {
				args = appendValues(args, l)
			}
			rows, err := a.query(st.byLink[ri].text(len(part)), args...)
			if err != nil {
				return nil, fmt.Errorf("reading the joined groups of %s: %w", a.p.Name, err)
			}
			got, err := scanValues(rows)
			if err != nil {
				return nil, fmt.Errorf("reading the joined groups of %s: %w", a.p.Name, err)
			}
			for _, r := range got {
				found[ri][groupText(r[:n])] = r[n:]
			}
		}
	}
	out := make(map[string][]projections.Value, len(kept))
next:
	for _, c := range kept {
		if c.Group == nil {
			continue
		}
		group := slices.Clone(c.Group)
		for ri, gs := range st.linkGroups {
			if len(gs) == 0 {
				continue
			}
			if ri >= len(c.Parents) || c.Parents[ri].Key == "" {
				continue // no parent: NULL, the row is in no group
			}
			vals, ok := found[ri][groupText(c.Parents[ri].Values)]
			if !ok {
				continue next
			}
			for k, gi := range gs {
				group[ag.Joined[gi].Index] = vals[k]
			}
		}
		out[c.SourceKey] = group
	}
	return out, nil
}

// joinedLockName is the `_readside_truncations` row whose lock the
// batches of p take: exclusively one at a time, shared at once.
func joinedLockName(p *projections.Projection) string { return p.Name + "#groups" }

// lockJoinedGroups takes p's batch lock (first, so batches queue there):
// exclusively when b changes or truncates a parent, or truncates the
// source (movesGroups), shared otherwise.
func (a *applier) lockJoinedGroups(b *projections.Batch) error {
	if !joinedAgg(a.p) {
		return nil
	}
	stmt := a.st.agg.joined.share
	if movesGroups(b) {
		stmt = a.st.agg.joined.lock
	}
	if err := a.exec(stmt, joinedLockName(a.p)); err != nil {
		return fmt.Errorf("locking the groups of %s: %w", a.p.Name, err)
	}
	return nil
}

// movesGroups reports a batch that must apply alone: one that changes
// or truncates a parent (its regroup reads chains of state and the
// contributions below them, which no other batch may be writing) or
// truncates the source (every group is rebuilt). The other batches only
// read the state, which none of them changes, and write and regroup
// their own source rows' contributions (no two concurrent batches share
// one: a row's events travel in one partition), adding to the group rows
// as every aggregate's concurrent batches do; so they apply at once.
func movesGroups(b *projections.Batch) bool {
	if len(b.Parents) > 0 {
		return true
	}
	for _, c := range b.Contributions {
		if c.Truncate {
			return true
		}
	}
	return false
}

// regroup moves the contributions whose joined group columns the batch
// may have changed to their groups under the state the batch leaves:
// those it wrote (a.regroupKeys), those below every parent it changed
// (keys, joinState's), and all of them after a parent truncation. Each
// read gives the stored group and the state's; the deltas come from
// those, and the read's own move statement (the same rows: nothing in
// between changes a link or the state) stores the state's groups.
func (a *applier) regroup(keys [][]parentKey) error {
	st := a.st.agg.joined
	var reads []regroupRead
	if a.regroupAll {
		reads = append(reads, regroupRead{query: st.all, move: st.moveAll})
	} else {
		for start := 0; start < len(a.regroupKeys); start += chunk {
			part := a.regroupKeys[start:min(start+chunk, len(a.regroupKeys))]
			args := make([]any, len(part))
			for i, k := range part {
				args[i] = []byte(k)
			}
			reads = append(reads, regroupRead{st.byKey.text(len(part)), st.moveByKey.text(len(part)), args})
		}
		for ji := range a.p.Joins {
			changed := changedKeys(keys[ji])
			for start := 0; start < len(changed); start += chunk {
				part := changed[start:min(start+chunk, len(changed))]
				var args []any
				for _, k := range part {
					args = appendValues(args, k.values)
				}
				reads = append(reads, regroupRead{st.byParent[ji].text(len(part)), st.moveByParent[ji].text(len(part)), args})
			}
		}
	}
	a.regroupKeys, a.regroupAll = nil, false
	rows := map[string]regroupRow{}
	for i, r := range reads {
		if err := a.readRegroup(r.query, r.args, i, rows); err != nil {
			return fmt.Errorf("reading the contributions of %s to regroup: %w", a.p.Name, err)
		}
	}
	order := make([]string, 0, len(rows))
	for k := range rows {
		order = append(order, k)
	}
	slices.Sort(order)
	ag := a.p.Aggregation
	// The batch's own deltas (contributions) and these sum to what the
	// batch does to each group, written in one upsert. Every withdrawal
	// here is of a contribution stored before the batch: one the batch
	// wrote is in the group the state gives it (completeJoinedGroups) or
	// in none, so nothing is added and withdrawn within one delta.
	ds := a.deltas
	a.deltas = nil
	if ds == nil {
		ds = newDeltas(ag)
	}
	moves := make([]bool, len(reads))
	for _, k := range order {
		r := rows[k]
		if !sourceSide(ag, r.old) {
			continue // in no group: deleted or filtered out
		}
		if valuesText(r.old) == valuesText(r.now) {
			continue
		}
		// Stored with its new group on every shard (moves), moved in the
		// group rows only on the group's own: shard_by is a source-side
		// group column, the same in old and now.
		moves[r.read] = true
		if !a.localGroup(r.old) {
			continue
		}
		if complete(r.old) {
			if err := ds.add(r.old, r.values, -1, r.version); err != nil {
				return err
			}
		}
		if complete(r.now) {
			if err := ds.add(r.now, r.values, 1, r.version); err != nil {
				return err
			}
		}
	}
	for i, r := range reads {
		if !moves[i] {
			continue
		}
		if err := a.exec(r.move, r.args...); err != nil {
			return fmt.Errorf("regrouping the contributions of %s: %w", a.p.Name, err)
		}
	}
	return a.applyDeltas(ds)
}

// regroupRead is one read of contributions to regroup, and the statement
// that moves the same rows to the groups it read.
type regroupRead struct {
	query, move string
	args        []any
}

// regroupRow is a stored contribution with the group the state gives it.
type regroupRow struct {
	version  uint64
	old, now []projections.Value // its stored group, and the state's
	values   []projections.Value // per aggregate (deltas.add)
	read     int                 // the regroupRead that found it last
}

// readRegroup reads contributions with the state's joined group columns
// into out, found by read number read.
func (a *applier) readRegroup(query string, args []any, read int, out map[string]regroupRow) error {
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
	raw, value, cells, n := cs.dest, cs.value, cs.bytes, len(types)
	k := len(a.p.Key)
	for rows.Next() {
		var version uint64
		raw[1] = &version
		if err := rows.Scan(raw...); err != nil {
			return err
		}
		r := regroupRow{version: version, old: make([]projections.Value, k), values: make([]projections.Value, len(ag.Aggregates)), read: read}
		for i := range k {
			r.old[i] = value(2 + i)
		}
		col := 2 + k
		for i, x := range ag.Aggregates {
			if !x.Stored() {
				r.values[i] = projections.ValueOf("1")
				continue
			}
			r.values[i] = value(col)
			col++
		}
		r.now = slices.Clone(r.old)
		for i, g := range ag.Joined {
			r.now[g.Index] = value(n - len(ag.Joined) + i)
		}
		out[string(cells[0])] = r
	}
	return rows.Err()
}

// complete reports a group with no NULL column: one a row can be in.
func complete(group []projections.Value) bool {
	for i := range group {
		if group[i].Kind() == projections.NullValue {
			return false
		}
	}
	return true
}

// sourceSide reports whether group's source-side columns (those not
// joined) are all set: the row is in a group on this shard, parents
// allowing.
func sourceSide(ag *projections.Aggregation, group []projections.Value) bool {
	for i := range group {
		if ag.JoinedGroupIndex(i) == nil && group[i].Kind() == projections.NullValue {
			return false
		}
	}
	return true
}

// joinedAggDDL are the contributions table's link columns and their
// indexes (regroup finds a parent's rows by them), given the root joins'
// key types.
func joinedAggDDL(p *projections.Projection, types projections.Types) (defs, idx []string) {
	if !joinedAgg(p) {
		return nil, nil
	}
	for i, j := range p.Joins {
		if j.Via != nil {
			continue
		}
		var cols []string
		for _, o := range j.On {
			defs = append(defs, q(o.Read)+" "+nullable(types.KeptLinkType(i, o.Parent))+" COMMENT "+sqlquote.Literal(fmt.Sprintf("readside: the row's %s, its link to %s.%s", o.Child, j.ParentDB, j.ParentTbl)))
			cols = append(cols, q(o.Read))
		}
		idx = append(idx, fmt.Sprintf("KEY `_rs_link%d` (%s)", j.N, strings.Join(cols, ", ")))
	}
	return defs, idx
}

// joinedStateIndexDefs index the carried keys of join j's state table in
// an aggregate with joined group columns: regroup walks a chain from a
// changed parent back to the contributions, through them.
func joinedStateIndexDefs(p *projections.Projection, j *projections.Join) []string {
	if !joinedAgg(p) {
		return nil
	}
	var out []string
	for _, d := range p.Joins {
		if d.Via != j {
			continue
		}
		var cols []string
		for _, o := range d.On {
			cols = append(cols, q(stateCol(o.Read)))
		}
		out = append(out, fmt.Sprintf("KEY `_rs_via%d` (%s)", d.N, strings.Join(cols, ", ")))
	}
	return out
}

// appendLinks appends a contribution's link columns (linkColumns): the
// root joins' parent keys of parents (nil or an empty ref: NULL).
func appendLinks(row []any, p *projections.Projection, parents []projections.ParentRef) []any {
	if !joinedAgg(p) {
		return row
	}
	for i, j := range p.Joins {
		if j.Via != nil {
			continue
		}
		var vals []projections.Value
		if i < len(parents) && parents[i].Key != "" {
			vals = parents[i].Values
		}
		for k := range j.On {
			if k < len(vals) {
				row = append(row, &vals[k])
			} else {
				row = append(row, nil)
			}
		}
	}
	return row
}
