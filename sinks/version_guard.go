package sinks

// The version guard: a read row moves only to a newer version of itself.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/readside/readside/projections"
)

// upsertStatement is the version-guarded upsert of p's read rows. ON
// DUPLICATE KEY UPDATE assigns left to right and later assignments see
// earlier ones, so the order is: each join's columns (which compare the
// old join columns and version), then the row's own columns (which
// compare the old _rs_version), then _rs_version last.
//
// Joined columns are not written here: a new row starts without a parent
// (NULL, join version 0), and a newer change that moves the row to
// another parent clears the old parent's copy; the fan-out then fills
// both in from the join state.
func upsertStatement(p *projections.Projection, d dialect) multiRow {
	var cols, sets []string
	newer := d.newRow("`_rs_version`") + " > `_rs_version`"
	for _, j := range p.Joins {
		var same []string
		// A join hanging off another (via) moves with the row's
		// reference at the start of its chain: its own key is carried.
		for _, on := range j.Root().On {
			same = append(same, d.newRow(q(on.Read))+" <=> "+q(on.Read))
		}
		moved := newer + " AND NOT (" + strings.Join(same, " AND ") + ")"
		for _, c := range j.Columns {
			sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s, NULL, %[1]s)", q(c.Name), moved))
		}
		sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s, 0, %[1]s)", q(j.VersionColumn()), moved))
	}
	// Key columns are assigned too: under a _ci or PAD SPACE collation
	// a key spelled otherwise ('AB' for 'ab', 'x ' for 'x') finds the
	// stored row, and the newer version's spelling is the source's.
	for _, c := range p.Columns {
		cols = append(cols, q(c.Name))
		sets = append(sets, fmt.Sprintf("%[1]s = IF(%[2]s, %[3]s, %[1]s)", q(c.Name), newer, d.newRow(q(c.Name))))
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, "+d.newRow("`_rs_version`")+")")
	return multiRow{
		head: "INSERT INTO " + q(p.Table) + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES ",
		row:  "(" + strings.Repeat("?, ", len(p.Columns)) + "?)",
		sep:  ", ",
		tail: d.onDuplicate() + strings.Join(sets, ", "),
	}
}

// upsert writes rows whose version is newer than what the table holds
// (upsertStatement).
func (a *applier) upsert(ups []projections.Write) error {
	ups, err := a.upsertEnumZero(ups)
	if err != nil {
		return err
	}
	return a.upsertRows(ups, false)
}

// upsertRows writes ups; lenient: each statement without strict mode
// (enumzero.go).
func (a *applier) upsertRows(ups []projections.Write, lenient bool) error {
	if len(ups) == 0 {
		return nil
	}
	stmt := &a.st.upsert
	tt, direct := a.run.(textStmts)
	if lenient {
		stmt, direct = &a.st.lenientUpsert, false
	}
	for _, sp := range spans(len(ups), func(i int) int { return valueBytes(ups[i].Values) }, a.limit) {
		part := ups[sp[0]:sp[1]]
		if direct {
			err := a.upsertText(tt, stmt, part)
			if err == nil {
				continue
			}
			if !errors.Is(err, errTextTooLarge) {
				return fmt.Errorf("upserting into %s: %w", a.p.Table, err)
			}
			// Too long as text once escaped: with parameters below.
		}
		if err := a.upsertParams(stmt, part); err != nil {
			return fmt.Errorf("upserting into %s: %w", a.p.Table, err)
		}
	}
	return nil
}

// upsertText writes the rows' values straight into the statement's text:
// no placeholders to write and then find again.
func (a *applier) upsertText(tt textStmts, stmt *multiRow, part []projections.Write) error {
	n := len(a.st.comment) + len(stmt.head) + len(stmt.tail)
	for i := range part {
		n += valueBytes(part[i].Values) + 24
	}
	return tt.execText(a.ctx, n, func(buf []byte) []byte {
		buf = append(append(buf, a.st.comment...), stmt.head...)
		for i := range part {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = append(buf, '(')
			for j := range part[i].Values {
				buf = append(appendValue(buf, &part[i].Values[j]), ", "...)
			}
			buf = append(strconv.AppendUint(buf, part[i].Version, 10), ')')
		}
		return append(buf, stmt.tail...)
	})
}

// upsertParams writes the rows as parameters of the statement.
func (a *applier) upsertParams(stmt *multiRow, part []projections.Write) error {
	// Sized up front: a backlog's statements are thousands of rows,
	// and growing this slice row by row was 5% of the projector's CPU
	// in a drain (bench/results/history/tuning-log.md, entry 27).
	args := make([]any, 0, len(part)*(len(a.p.Columns)+1))
	for i := range part {
		args = appendValues(args, part[i].Values)
		args = append(args, &part[i].Version) // a pointer: no allocation per row
	}
	return a.exec(stmt.text(len(part)), args...)
}
