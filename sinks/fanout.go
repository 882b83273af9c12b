package sinks

// Join fan-out: a parent's state copied into the read rows of its
// children.

import (
	"fmt"
	"strings"

	"github.com/readside/readside/projections"
)

// fanOutStatement copies join j's state into the read rows of a batch's
// parent keys (one placeholder group per key) wherever the row shows an
// older parent version.
func fanOutStatement(p *projections.Projection, j *projections.Join) multiRow {
	var match []string
	for _, o := range j.On {
		match = append(match, "s."+q(stateKey(o.Parent)))
	}
	return copyState(p, j, match, false)
}

// fillRowsStatement copies join j's state into the read rows of given
// read keys (one placeholder group per row, p.Key's columns) wherever
// the row shows an older parent version: the rows a batch writes.
func fillRowsStatement(p *projections.Projection, j *projections.Join) multiRow {
	var match []string
	for _, k := range p.Key {
		match = append(match, "r."+q(k))
	}
	return copyState(p, j, match, true)
}

// copyState is the statement copying join j's state into the read rows
// whose columns match (of r, the read table, or s, j's state) equal one
// of its keys (keyIn), wherever the row shows an older parent version.
// byRead: match is of r, whose rows are then found first (STRAIGHT_JOIN);
// left to itself, the optimizer would rather reach r from the state keys
// its join condition implies, and read every row of each parent, several
// times the rows matched.
func copyState(p *projections.Projection, j *projections.Join, match []string, byRead bool) multiRow {
	join := " JOIN "
	if byRead {
		join = " STRAIGHT_JOIN "
	}
	return keyIn(p, copyStateJoined(p, j, join)+" AND ", match, "")
}

// copyStateEverywhere copies join j's state into every read row that
// shows an older version of its parent.
func copyStateEverywhere(p *projections.Projection, j *projections.Join) string {
	return copyStateJoined(p, j, " JOIN ")
}

// copyStateJoined is copyStateEverywhere with its tables joined by join.
func copyStateJoined(p *projections.Projection, j *projections.Join, join string) string {
	var on, sets []string
	for _, o := range j.On {
		on = append(on, fmt.Sprintf("r.%s = s.%s", q(o.Read), q(stateKey(o.Parent))))
	}
	for _, c := range j.Columns {
		sets = append(sets, fmt.Sprintf("r.%s = s.%s", q(c.Name), q(stateCol(c.Name))))
	}
	v := q(j.VersionColumn())
	sets = append(sets, "r."+v+" = s.`_rs_version`")
	return "UPDATE " + q(p.Table) + " AS r" + join + q(j.StateTable(p)) + " AS s ON " + strings.Join(on, " AND ") +
		" SET " + strings.Join(sets, ", ") + " WHERE r." + v + " < s.`_rs_version`"
}

// fillRows copies join ji's state into the read rows of the batch's
// upserts (fillRowsStatement): rows that are new, or that a newer change
// moved to another parent (the upsert cleared their copy), or that
// already show their parent's newest version.
func (a *applier) fillRows(ji int, rows []parentKey) error {
	if err := a.execKeys(&a.st.joins[ji].fillRows, rows); err != nil {
		j := a.p.Joins[ji]
		return fmt.Errorf("copying %s.%s into the rows %s writes: %w", j.ParentDB, j.ParentTbl, a.p.Table, err)
	}
	return nil
}

// fanOut copies join ji's state into the read rows of the given parent
// keys (fanOutStatement).
func (a *applier) fanOut(ji int, keys []parentKey) error {
	if err := a.execKeys(&a.st.joins[ji].fanOut, keys); err != nil {
		j := a.p.Joins[ji]
		return fmt.Errorf("copying %s.%s into %s: %w", j.ParentDB, j.ParentTbl, a.p.Table, err)
	}
	return nil
}
