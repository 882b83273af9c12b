package sinks

import (
	"fmt"
	"strings"

	"github.com/readside/readside/projections"
)

// fanOut copies join j's state into the read rows of the given parent
// keys wherever the row shows an older parent version.
func (a *applier) fanOut(j *projections.Join, keys []parentKey) error {
	if len(keys) == 0 {
		return nil
	}
	var on, sets, match []string
	for _, o := range j.On {
		on = append(on, fmt.Sprintf("r.%s = s.%s", q(o.Read), q(stateKey(o.Parent))))
		match = append(match, fmt.Sprintf("s.%s = ?", q(stateKey(o.Parent))))
	}
	for _, c := range j.Columns {
		sets = append(sets, fmt.Sprintf("r.%s = s.%s", q(c.Name), q(stateCol(c.Name))))
	}
	v := q(j.VersionColumn())
	sets = append(sets, "r."+v+" = s.`_rs_version`")
	one := "(" + strings.Join(match, " AND ") + ")"
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		var args []any
		for _, k := range part {
			args = appendValues(args, k.values)
		}
		stmt := "UPDATE " + q(a.p.Table) + " AS r JOIN " + q(j.StateTable(a.p)) + " AS s ON " + strings.Join(on, " AND ") +
			" SET " + strings.Join(sets, ", ") + " WHERE r." + v + " < s.`_rs_version` AND (" + one + strings.Repeat(" OR "+one, len(part)-1) + ")"
		if err := a.exec(stmt, args...); err != nil {
			return fmt.Errorf("copying %s.%s into %s: %w", j.ParentDB, j.ParentTbl, a.p.Table, err)
		}
	}
	return nil
}
