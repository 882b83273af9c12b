package sinks

// Joins through a parent's parent (config `via`; docs/design/joins.md,
// "Joins through a parent's parent"). A join J that hangs off join V
// finds its parent by a column of V's parent, which V carries into every
// read row (a hidden column, projections.Column.Carried) and into its
// state table. So J's fan-out is an ordinary one — an indexed UPDATE of
// the rows whose carried key names the changed parent — and what is new
// is where J's parent keys come from and what happens when a row's
// carried key changes:
//
//   - keys: a batch's keys of J are its J parent changes plus the carried
//     keys that V's state holds, after V's changes, for every V key the
//     batch touches (a child that arrives, a V parent that changes). They
//     are read under V's state-row locks, so no one changes them until
//     the batch commits, and locked in join order (V before J), so the
//     batch meets, at J's state-row lock, every transaction that changes
//     J's parent of a row it writes.
//   - detach: before V's fan-out moves a row to another carried key, J's
//     columns (and those of the joins hanging off J) go back to NULL and
//     version 0, in the same transaction; J's fan-out over the new key
//     then fills them from J's state. A J version only orders versions of
//     one J parent row, so it must restart when the row points at another.

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/readside/readside/projections"
)

// viaStatements are the statements of a join that hangs off another.
type viaStatements struct {
	// keys reads, for the via join's parent keys (one placeholder group
	// each), the distinct keys of this join's parent its state carries.
	keys multiRow
	// detach clears this join's (and its dependents') columns in the read
	// rows that the via join's fan-out is about to move to another key.
	detach multiRow
	// detachRows is detach for the read rows of given read keys (the
	// rows a batch writes), found first: under a background fan-out
	// their fill may move them to another key.
	detachRows multiRow
	// fills fill this join's columns in the read rows of given keys of
	// an earlier join of its chain (fillBy), not of this join's keys.
	fills []fillBy
}

// fillBy is a via join's fill of the read rows found by the keys of
// another join of its chain (ancestor, an index into the projection's
// joins): the rows a batch wrote or moved, without reading every row of
// every parent-of-parent those rows point at.
type fillBy struct {
	ancestor int
	stmt     multiRow
}

// viaStatementsOf renders j's via statements (j.Via != nil).
func viaStatementsOf(p *projections.Projection, j *projections.Join) viaStatements {
	v := j.Via
	var carried, notNull, same, match, on []string
	for _, o := range j.On {
		c := q(stateCol(o.Read))
		carried = append(carried, c)
		notNull = append(notNull, c+" IS NOT NULL")
		same = append(same, fmt.Sprintf("r.%s <=> s.%s", q(o.Read), c))
	}
	for _, o := range v.On {
		match = append(match, "s."+q(stateKey(o.Parent)))
		on = append(on, fmt.Sprintf("r.%s = s.%s", q(o.Read), q(stateKey(o.Parent))))
	}
	vv := q(v.VersionColumn())
	var readKey []string
	for _, k := range p.Key {
		readKey = append(readKey, "r."+q(k))
	}
	detach := func(join string) string {
		return "UPDATE " + q(p.Table) + " AS r" + join + q(v.StateTable(p)) + " AS s ON " + strings.Join(on, " AND ") +
			" SET " + strings.Join(detachSets("r.", append([]*projections.Join{j}, p.Dependents(j)...)...), ", ") +
			" WHERE r." + vv + " < s.`_rs_version` AND NOT (" + strings.Join(same, " AND ") + ") AND "
	}
	return viaStatements{
		keys:       keyIn(p, "SELECT DISTINCT "+strings.Join(exactReads(p, v.StateTable(p), carried), ", ")+" FROM "+q(v.StateTable(p))+" AS s WHERE "+strings.Join(notNull, " AND ")+" AND ", match, ""),
		detach:     keyIn(p, detach(" JOIN "), match, ""),
		detachRows: keyIn(p, detach(" STRAIGHT_JOIN "), readKey, ""),
		fills:      viaFills(p, j),
	}
}

// viaFills renders j's fills by each join of its chain (j.Via, its via,
// … the root): j's state copied into the read rows whose column of that
// join's key matches (copyState).
func viaFills(p *projections.Projection, j *projections.Join) []fillBy {
	var out []fillBy
	for k := j.Via; k != nil; k = k.Via {
		var match []string
		for _, o := range k.On {
			match = append(match, "r."+q(o.Read))
		}
		out = append(out, fillBy{ancestor: slices.Index(p.Joins, k), stmt: copyState(p, j, match, true)})
	}
	return out
}

// fanOutVia brings join ji (which hangs off another) up to date in every
// read row that may show an older version of its parent after the batch:
//   - the rows of the parents the batch changes (a fan-out over ji's
//     changed keys);
//   - the rows the batch writes: by their read keys (rows, fanOuts), or,
//     when not byRow, by every key of the root join the batch touches
//     (the batch's rows point at them);
//   - the rows whose carried key of ji may have moved because a join
//     between the root and ji, the root included, changed their parent
//     (its changed keys).
//
// ji's keys that only the batch's rows point at (read from the via
// join's state) are locked but not fanned out over: every read row of
// such a parent outside the batch's rows already shows its newest version.
func (a *applier) fanOutVia(ji int, keys [][]parentKey, rows []parentKey, byRow bool) error {
	j := a.p.Joins[ji]
	if err := a.fanOut(ji, changedKeys(keys[ji])); err != nil {
		return err
	}
	for _, f := range a.st.joins[ji].via.fills {
		by := keys[f.ancestor]
		if a.p.Joins[f.ancestor].Via != nil || byRow {
			by = changedKeys(by)
		}
		if err := a.execKeys(&f.stmt, by); err != nil {
			return fmt.Errorf("copying %s.%s into the rows of %s that point at it: %w", j.ParentDB, j.ParentTbl, a.p.Table, err)
		}
	}
	return a.fillRows(ji, rows)
}

// changedKeys are the keys of ks that the batch changes.
func changedKeys(ks []parentKey) []parentKey {
	var out []parentKey
	for _, k := range ks {
		if k.changed {
			out = append(out, k)
		}
	}
	return out
}

// detachSets are the assignments that leave each of joins showing no
// parent (NULL columns, version 0), with columns prefixed by prefix.
func detachSets(prefix string, joins ...*projections.Join) []string {
	var sets []string
	for _, d := range joins {
		for _, c := range d.Columns {
			sets = append(sets, prefix+q(c.Name)+" = NULL")
		}
		sets = append(sets, prefix+q(d.VersionColumn())+" = 0")
	}
	return sets
}

// viaKeys reads the keys of join ji's parent that the via join's state
// carries for the via keys the batch touches, and adds them to have.
// Call it after the via join's state is locked and updated.
func (a *applier) viaKeys(ji int, viaKeys, have []parentKey) ([]parentKey, error) {
	j := a.p.Joins[ji]
	seen := map[string]bool{}
	for _, k := range have {
		seen[k.text] = true
	}
	stmt := &a.st.joins[ji].via.keys
	for start := 0; start < len(viaKeys); start += chunk {
		part := viaKeys[start:min(start+chunk, len(viaKeys))]
		var args []any
		for _, k := range part {
			args = appendValues(args, k.values)
		}
		rows, err := a.query(stmt.text(len(part)), args...)
		if err != nil {
			return nil, fmt.Errorf("reading the keys of %s.%s in the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, j.Via.ParentDB, j.Via.ParentTbl, err)
		}
		have, err = scanKeys(rows, seen, have)
		if err != nil {
			return nil, fmt.Errorf("reading the keys of %s.%s in the join state of %s.%s: %w", j.ParentDB, j.ParentTbl, j.Via.ParentDB, j.Via.ParentTbl, err)
		}
	}
	slices.SortFunc(have, func(x, y parentKey) int { return strings.Compare(x.text, y.text) })
	return have, nil
}

// scanKeys appends the keys rows hold that seen does not, and closes rows.
func scanKeys(rows *sql.Rows, seen map[string]bool, out []parentKey) ([]parentKey, error) {
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return out, err
	}
	cells := make([]sql.RawBytes, len(types))
	dest := make([]any, len(cells))
	for i := range cells {
		dest[i] = &cells[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return out, err
		}
		vals := make([]projections.Value, len(cells))
		for i, c := range cells {
			v, err := keyValue(types[i].DatabaseTypeName(), c)
			if err != nil {
				return out, err
			}
			vals[i] = v
		}
		text := valuesText(vals)
		if !seen[text] {
			seen[text] = true
			out = append(out, parentKey{text: text, values: vals})
		}
	}
	return out, rows.Err()
}

// keyValue is a state-table key cell as a parameter of the column's type:
// binary strings as bytes, bits as their pattern, the rest as text (a
// number's digits compare with an integer key through its index).
func keyValue(typ string, cell sql.RawBytes) (projections.Value, error) {
	b := slices.Clone([]byte(cell))
	switch typ = strings.ToUpper(typ); {
	case typ == "BIT":
		return projections.ValueOfBits(b), nil
	case strings.Contains(typ, "BINARY") || strings.Contains(typ, "BLOB"):
		return projections.ValueOf(b), nil
	case typ == "YEAR":
		return projections.ValueOf(string(projections.YearText(b))), nil
	}
	return projections.ValueOf(string(b)), nil
}

// valuesText is the identity of a via join's parent key: its values'
// kinds and bytes, the same whether the key came from an event or from a
// state table, so both kinds dedupe and sort together (one lock order).
func valuesText(vals []projections.Value) string {
	var b []byte
	for i := range vals {
		v := &vals[i]
		b = append(b, byte(v.Kind()))
		if v.Kind() == projections.UintValue {
			b = strconv.AppendUint(b, v.Uint(), 10)
		} else {
			b = strconv.AppendInt(b, int64(len(v.Bytes())), 10)
			b = append(append(b, ':'), v.Bytes()...)
		}
	}
	return string(b)
}

// detach runs join ji's detach for the via join's keys (viaStatements).
func (a *applier) detach(ji int, viaKeys []parentKey) error {
	if err := a.execKeys(&a.st.joins[ji].via.detach, viaKeys); err != nil {
		j := a.p.Joins[ji]
		return fmt.Errorf("clearing %s.%s in the rows of %s that move to another %s.%s: %w", j.ParentDB, j.ParentTbl, a.p.Table, j.ParentDB, j.ParentTbl, err)
	}
	return nil
}

// detachRows runs join ji's detach for the read rows of the given read
// keys (viaStatements.detachRows).
func (a *applier) detachRows(ji int, rows []parentKey) error {
	if err := a.execKeys(&a.st.joins[ji].via.detachRows, rows); err != nil {
		j := a.p.Joins[ji]
		return fmt.Errorf("clearing %s.%s in the rows of %s that the batch moves to another %s.%s: %w", j.ParentDB, j.ParentTbl, a.p.Table, j.Via.ParentDB, j.Via.ParentTbl, err)
	}
	return nil
}
