package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// joinedGroup is -aggregate's form for a projection grouped by a joined
// parent's column (one join, no via: `payment.staff_id → staff.store_id`).
// Besides the group rows, a batch writes what that design must keep to
// regroup (docs/design/aggregates.md "Groups from joined parents"): each
// source row's contribution with its link column and its group columns
// (<table>_b2c), each parent row's state (<table>_b2p), and the regroup of
// the contributions below a changed parent (one UPDATE … JOIN per batch).
// As in the projector, a batch that changes a parent runs alone: every
// connection idle before it, none started until it commits, since its
// regroup moves contributions between groups that the other connections
// write. The batches that change no parent run on a point's connections
// at once, each batch's rows dealt to them by key as the plain
// aggregate's are, so each contribution and group row has one writer.
type joinedGroup struct {
	join      config.Join
	link      string   // the source column the join's on names
	parentKey string   // the parent column it equals
	joined    []string // group columns that are the join's columns, in group_by order
}

// parseJoinedGroup reads the one join -aggregate supports and which group
// columns it gives; nil when the projection has no join.
func parseJoinedGroup(name string, d config.Projection) (*joinedGroup, error) {
	if len(d.Join) == 0 {
		return nil, nil
	}
	j := d.Join[0]
	if len(d.Join) > 1 || j.Via != "" || len(j.On) != 1 {
		return nil, fmt.Errorf("projections.%s.join: -aggregate measures one join on one column, without via", name)
	}
	jg := &joinedGroup{join: j}
	for parent, child := range j.On {
		jg.parentKey, jg.link = parent, child
	}
	for _, c := range d.GroupBy {
		if src, ok := j.Columns[c]; ok {
			if src != c {
				return nil, fmt.Errorf("projections.%s.join.columns.%s: -aggregate takes a joined group column under its parent column's name", name, c)
			}
			jg.joined = append(jg.joined, c)
		}
	}
	if len(jg.joined) == 0 {
		return nil, fmt.Errorf("projections.%s: no group_by column is the join's: -aggregate measures a join only when it gives the group", name)
	}
	return jg, nil
}

// parentCopy is the plain projection of the parent table whose writes
// carry each parent row's key and joined group columns.
func (jg *joinedGroup) parentCopy(d config.Projection, name string) config.Projection {
	cols := map[string]string{jg.parentKey: jg.parentKey}
	for _, c := range jg.joined {
		cols[c] = c
	}
	return config.Projection{From: jg.join.From, Sink: d.Sink, Table: name + "_b2par", Key: []string{jg.parentKey}, Columns: cols}
}

// replayStep is one record's writes, of the source (parent false) or of
// the parent table.
type replayStep struct {
	version uint64
	parent  bool
	writes  []projections.Write
}

// joinedReplay replays source and parent rows into group rows.
type joinedReplay struct {
	g       *grouping
	jg      *joinedGroup
	srcCols []string       // the source copy's columns, in write order
	parAt   map[string]int // parent column → index in a parent write's values
	pk      []string       // the source primary key
}

// joinedTxn is one transaction of a batch: the whole batch on one
// connection when it changes a parent (alone), else the rows of the
// batch dealt to connection conn.
type joinedTxn struct {
	alone bool
	conn  int
	stmts []string
}

// replay replays the steps batchRows records at a time and renders each
// batch: the contributions written, the parent state, the regroup, the
// group rows. A batch that writes parent state is one transaction that
// runs alone; another batch is one transaction per connection that has
// rows of it (contributions dealt by source row key, group rows by group
// key). It returns the transactions in batch order and the contribution,
// parent-state and group rows written.
func (r *joinedReplay) replay(table string, steps []replayStep, batchRows, conns int) (txns []joinedTxn, counts [3]int) {
	g := r.g
	rows := map[string]*member{}          // source row key → its contribution
	below := map[string]map[string]bool{} // parent key text → source row keys linking to it
	parentVals := map[string][]projections.Value{}
	groups := map[string]*groupRow{}
	linkAt := g.at[r.jg.link]
	// groupOf is a source row's group as the parent state gives it (ok
	// false: its parent is missing, no group).
	groupOf := func(vals []projections.Value) (key []projections.Value, text string, ok bool) {
		pv, found := parentVals[vals[linkAt].String()]
		if !found {
			return nil, "", false
		}
		key = make([]projections.Value, len(g.group))
		var b []byte
		for i, c := range g.group {
			if slices.Contains(r.jg.joined, c) {
				key[i] = pv[r.parAt[c]]
			} else {
				key[i] = vals[g.at[c]]
			}
			if key[i].Kind() == projections.NullValue {
				return nil, "", false
			}
			b = append(append(b, key[i].String()...), 0)
		}
		return key, string(b), true
	}
	leave := func(k string, m *member, touched map[string]bool) {
		if m.group != "" {
			delete(groups[m.group].members, k)
			touched[m.group] = true
			m.group = ""
		}
	}
	enter := func(k string, m *member, touched map[string]bool) {
		key, text, ok := groupOf(m.vals)
		if !ok {
			return
		}
		gr := groups[text]
		if gr == nil {
			gr = &groupRow{key: key, members: map[string]*member{}}
			groups[text] = gr
		}
		gr.members[k], m.group = m, text
		touched[text] = true
	}
	contribTbl, parentTbl := table+"c", table+"p"
	for lo := 0; lo < len(steps); lo += batchRows {
		touched := map[string]bool{}
		wroteRows := map[string][]projections.Value{} // source row key → its primary key values, for the rows whose contribution the batch writes
		wroteParent := map[string]bool{}              // parent key texts whose state the batch writes
		regroup := map[string]bool{}                  // parent key texts whose group columns changed
		for _, st := range steps[lo:min(lo+batchRows, len(steps))] {
			for _, w := range st.writes {
				if st.parent {
					// An upsert's values are the copy's columns, a
					// delete's its key alone.
					pk := w.Values[0].String()
					if w.Kind == projections.Upsert {
						pk = w.Values[r.parAt[r.jg.parentKey]].String()
					}
					old, had := parentVals[pk]
					if w.Kind == projections.Upsert {
						parentVals[pk] = w.Values
					} else {
						delete(parentVals, pk)
					}
					wroteParent[pk] = true
					if had && w.Kind == projections.Upsert && r.sameGroup(old, w.Values) {
						continue
					}
					regroup[pk] = true
					for k := range below[pk] {
						m := rows[k]
						leave(k, m, touched)
						enter(k, m, touched)
					}
					continue
				}
				if old := rows[w.Key]; old != nil {
					leave(w.Key, old, touched)
					delete(below[old.vals[linkAt].String()], w.Key)
					delete(rows, w.Key)
				}
				if w.Kind != projections.Upsert {
					wroteRows[w.Key] = w.Values // the key columns
					continue
				}
				m := &member{vals: w.Values}
				rows[w.Key] = m
				wroteRows[w.Key] = nil
				lk := w.Values[linkAt].String()
				if below[lk] == nil {
					below[lk] = map[string]bool{}
				}
				below[lk][w.Key] = true
				enter(w.Key, m, touched)
			}
		}
		alone := len(wroteParent) > 0
		n := conns
		if alone {
			n = 1
		}
		conn := func(k string) int {
			if alone {
				return 0
			}
			return connOf(k, n)
		}
		// Contributions: each written row's final values, its link and
		// its group columns (NULL without a parent).
		ins, del := make([][]byte, n), make([][]byte, n)
		for _, k := range slices.Sorted(maps.Keys(wroteRows)) {
			m, c := rows[k], conn(k)
			if m == nil {
				del[c] = g.appendKey(sep(del[c], "DELETE FROM `"+contribTbl+"` WHERE ("+quoteList(r.pk)+") IN ("), wroteRows[k])
				counts[0]++
				continue
			}
			ins[c] = r.appendContribution(sep(ins[c], "INSERT INTO `"+contribTbl+"` VALUES "), m, groupOf)
			counts[0]++
		}
		stmts := make([][]string, n)
		for c := range stmts {
			if ins[c] != nil {
				stmts[c] = append(stmts[c], string(append(ins[c], r.updateAll(append(slices.Clone(r.srcCols[len(r.pk):]), r.jg.joined...))...)))
			}
			if del[c] != nil {
				stmts[c] = append(stmts[c], string(append(del[c], ')')))
			}
		}
		// Parent state (only in a batch that runs alone, on stmts[0]).
		var pins, pdel []byte
		for _, pk := range slices.Sorted(maps.Keys(wroteParent)) {
			counts[1]++
			pv, ok := parentVals[pk]
			if !ok {
				pdel = fmt.Appendf(sep(pdel, "DELETE FROM `"+parentTbl+"` WHERE `"+r.jg.parentKey+"` IN ("), "%s", literalOfText(pk))
				continue
			}
			pins = append(sep(pins, "INSERT INTO `"+parentTbl+"` VALUES "), '(')
			pins = appendLiteral(pins, pv[r.parAt[r.jg.parentKey]])
			for _, c := range r.jg.joined {
				pins = appendLiteral(append(pins, ','), pv[r.parAt[c]])
			}
			pins = append(pins, ')')
		}
		if pins != nil {
			stmts[0] = append(stmts[0], string(append(pins, r.updateAll(r.jg.joined)...)))
		}
		if pdel != nil {
			stmts[0] = append(stmts[0], string(append(pdel, ')')))
		}
		// Regroup: the contributions below a parent whose group columns
		// changed take the parent state's (NULL when it is gone).
		if len(regroup) > 0 {
			var set []string
			for _, c := range r.jg.joined {
				set = append(set, fmt.Sprintf("c.`%s` = p.`%s`", c, c))
			}
			var keys []byte
			for _, pk := range slices.Sorted(maps.Keys(regroup)) {
				keys = fmt.Appendf(sep(keys, ""), "%s", literalOfText(pk))
			}
			stmts[0] = append(stmts[0], fmt.Sprintf("UPDATE `%s` c LEFT JOIN `%s` p ON p.`%s` = c.`%s` SET %s WHERE c.`%s` IN (%s)",
				contribTbl, parentTbl, r.jg.parentKey, r.jg.link, strings.Join(set, ", "), r.jg.link, keys))
		}
		// Group rows.
		ins, del = make([][]byte, n), make([][]byte, n)
		for _, gk := range slices.Sorted(maps.Keys(touched)) {
			gr, c := groups[gk], conn(gk)
			counts[2]++
			if len(gr.members) == 0 {
				del[c] = g.appendKey(sep(del[c], "DELETE FROM `"+table+"` WHERE ("+quoteList(g.group)+") IN ("), gr.key)
				delete(groups, gk)
				continue
			}
			ins[c] = g.appendRow(sep(ins[c], "INSERT INTO `"+table+"` VALUES "), gr)
		}
		var aggCols []string
		for _, a := range g.aggs {
			aggCols = append(aggCols, a.column)
		}
		for c := range stmts {
			if ins[c] != nil {
				stmts[c] = append(stmts[c], string(append(ins[c], r.updateAll(aggCols)...)))
			}
			if del[c] != nil {
				stmts[c] = append(stmts[c], string(append(del[c], ')')))
			}
			if stmts[c] != nil {
				txns = append(txns, joinedTxn{alone: alone, conn: c, stmts: stmts[c]})
			}
		}
	}
	return txns, counts
}

// connOf is the connection of n a row key is dealt to.
func connOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// phases splits the transactions into what runs between barriers: each
// alone transaction is a phase of its own on one connection; each run of
// the others is one phase, a transaction list per connection (conns of
// them), each list in batch order.
func phases(txns []joinedTxn, conns int) [][][][]string {
	var out [][][][]string
	var open [][][]string // the phase of concurrent transactions being filled
	for _, t := range txns {
		if t.alone {
			if open != nil {
				out, open = append(out, open), nil
			}
			out = append(out, [][][]string{{t.stmts}})
			continue
		}
		if open == nil {
			open = make([][][]string, conns)
		}
		open[t.conn] = append(open[t.conn], t.stmts)
	}
	if open != nil {
		out = append(out, open)
	}
	return out
}

// sameGroup reports whether two images of a parent row give the same
// group columns.
func (r *joinedReplay) sameGroup(a, b []projections.Value) bool {
	for _, c := range r.jg.joined {
		if a[r.parAt[c]].String() != b[r.parAt[c]].String() {
			return false
		}
	}
	return true
}

func (r *joinedReplay) updateAll(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("`%s` = VALUES(`%s`)", c, c)
	}
	return " ON DUPLICATE KEY UPDATE " + strings.Join(parts, ", ")
}

// appendContribution appends a contribution's tuple: the source copy's
// columns, then the joined group columns.
func (r *joinedReplay) appendContribution(b []byte, m *member, groupOf func([]projections.Value) ([]projections.Value, string, bool)) []byte {
	b = append(b, '(')
	for i, c := range r.srcCols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLiteral(b, m.vals[r.g.at[c]])
	}
	key, _, ok := groupOf(m.vals)
	for _, c := range r.jg.joined {
		b = append(b, ',')
		if !ok {
			b = append(b, "NULL"...)
			continue
		}
		b = appendLiteral(b, key[slices.Index(r.g.group, c)])
	}
	return append(b, ')')
}

// literalOfText turns a Value's String (a Go-quoted text or a number)
// back into a SQL literal.
func literalOfText(s string) string {
	if strings.HasPrefix(s, `"`) {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(strings.Trim(s, `"`), `\`, `\\`), `'`, `\'`) + "'"
	}
	return s
}

func quoteList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = "`" + c + "`"
	}
	return strings.Join(q, ", ")
}

// createState creates the contributions table (the source copy's
// columns, then the joined group columns, keyed by the source's primary
// key, indexed by the link) and the parent state table.
func (r *joinedReplay) createState(ctx context.Context, sink *sinks.MySQL, table string, types, ptypes projections.Types) error {
	var defs []string
	for _, c := range r.srcCols {
		defs = append(defs, fmt.Sprintf("`%s` %s", c, types.Read[c]))
	}
	var pdefs []string
	for _, c := range r.jg.joined {
		defs = append(defs, fmt.Sprintf("`%s` %s NULL", c, baseType(ptypes.Read[c])))
		pdefs = append(pdefs, fmt.Sprintf("`%s` %s NULL", c, baseType(ptypes.Read[c])))
	}
	return sink.Exec(ctx, []string{
		fmt.Sprintf("DROP TABLE IF EXISTS `%sc`", table), fmt.Sprintf("DROP TABLE IF EXISTS `%sp`", table),
		fmt.Sprintf("CREATE TABLE `%sc` (%s, PRIMARY KEY (%s), KEY (`%s`))", table, strings.Join(defs, ", "), quoteList(r.pk), r.jg.link),
		fmt.Sprintf("CREATE TABLE `%sp` (`%s` %s NOT NULL, %s, PRIMARY KEY (`%s`))", table, r.jg.parentKey, baseType(ptypes.Read[r.jg.parentKey]), strings.Join(pdefs, ", "), r.jg.parentKey),
	})
}

// run measures each point (its batch size and connections; the batches
// that change a parent alone, the others concurrently) and emits the
// best, with the group rows' checksum, which the split leaves the same
// for every point. The rate counts records (source and parent events)
// per second, as the projector's does.
func (r *joinedReplay) run(ctx context.Context, sink *sinks.MySQL, table string, steps []replayStep, points []benchio.Point) error {
	var best benchio.Result
	for _, pt := range points {
		if err := sink.Exec(ctx, []string{"TRUNCATE TABLE `" + table + "`", "TRUNCATE TABLE `" + table + "c`", "TRUNCATE TABLE `" + table + "p`"}); err != nil {
			return err
		}
		txns, counts := r.replay(table, steps, pt.BatchRows, pt.Connections)
		phs := phases(txns, pt.Connections)
		settlePoint(ctx, sink, &best, pt)
		load, cpu0 := benchio.Load1(), benchio.SelfCPU()
		t := time.Now()
		for _, ph := range phs {
			if err := execAll(ctx, sink.DB(), ph); err != nil {
				return err
			}
		}
		secs := time.Since(t).Seconds()
		pt.PerS = float64(len(steps)) / secs
		best.Sweep = append(best.Sweep, pt)
		if pt.PerS > best.PerS {
			best.PerS, best.Seconds, best.Load1, best.Events = pt.PerS, secs, load, len(steps)
			best.CPUPer1000 = (benchio.SelfCPU() - cpu0) / float64(len(steps)) * 1000
			best.Description = fmt.Sprintf("%d-record batches, %d connection(s): %d contribution, %d parent-state and %d group rows written for %d records",
				pt.BatchRows, pt.Connections, counts[0], counts[1], counts[2], len(steps))
		}
	}
	cols := slices.Clone(r.g.group)
	for _, a := range r.g.aggs {
		cols = append(cols, a.column)
	}
	var err error
	if best.ReadRows, best.Checksum, err = benchio.TableChecksum(ctx, sink.DB(), table, cols); err != nil {
		return err
	}
	benchio.Emit(best)
	return nil
}
