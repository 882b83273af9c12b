package verify

// Aggregates whose group columns come from joined parents
// (projections.Aggregation.Joined): the source side joins every parent
// along its via chain (an inner join: a row whose parent is missing is
// in no group) and leaves out the rows with a NULL joined group column,
// as the projector does:
//
//	SELECT j1.store_id, …, SUM(s.amount) … FROM src s JOIN staff j1 ON j1.staff_id = s.staff_id …
//	WHERE <where> AND j1.store_id IS NOT NULL GROUP BY …

import (
	"context"
	"fmt"
	"strings"

	"github.com/readside/readside/projections"
)

// joinedGroupsFrom is groupsFrom for an aggregate with joined group
// columns.
func joinedGroupsFrom(p *projections.Projection) string {
	var sel, by, cond []string
	for i, name := range groupColumns(p) {
		e := groupSQL(p, name, sourceColumn)
		if j := joinedColumn(p, name); j != "" {
			e = j
			cond = append(cond, j+" IS NOT NULL")
		}
		sel = append(sel, e+" AS "+q(name))
		by = append(by, fmt.Sprint(i+1))
	}
	for _, a := range p.Aggregation.Aggregates {
		sel = append(sel, aggregateSQL(a)+" AS "+q(a.Column))
	}
	from := q(p.SourceDB) + "." + q(p.SourceTbl) + " s"
	for _, j := range p.Joins {
		var on []string
		child := "s"
		if j.Via != nil {
			child = fmt.Sprintf("j%d", j.Via.N)
		}
		for _, o := range j.On {
			on = append(on, fmt.Sprintf("j%d.%s = %s.%s", j.N, q(o.Parent), child, q(o.Child)))
		}
		from += fmt.Sprintf(" JOIN %s.%s j%d ON %s", q(j.ParentDB), q(j.ParentTbl), j.N, strings.Join(on, " AND "))
	}
	if p.Where != nil {
		cond = append([]string{"(" + p.Where.SQL(sourceColumn) + ")"}, cond...)
	}
	where := ""
	if len(cond) > 0 {
		where = " WHERE " + strings.Join(cond, " AND ")
	}
	return "(SELECT " + strings.Join(sel, ", ") + " FROM " + from + where + " GROUP BY " + strings.Join(by, ", ") + ") s"
}

// joinedColumn is the source SQL of group column name when a joined
// parent gives it ("" otherwise).
func joinedColumn(p *projections.Projection, name string) string {
	for _, g := range p.Aggregation.Joined {
		if g.Column == name {
			return "(" + g.SQL(func(c string) string { return fmt.Sprintf("j%d.%s", g.Join.N, q(parentColumn(g.Join, c))) }) + ")"
		}
	}
	return ""
}

// parentColumn is the parent column join j copies into read column c.
func parentColumn(j *projections.Join, c string) string {
	for _, x := range j.Columns {
		if x.Name == c {
			return x.Source
		}
	}
	return c
}

// joinedEquals is the condition on join jg.Join's parent table that its
// group column jg equals value (the key's i-th column).
func (v *Verifier) joinedEquals(jg *projections.JoinedGroup, value string, i int) string {
	return "(" + jg.SQL(func(c string) string { return q(parentColumn(jg.Join, c)) }) + ") = " + literal(v.keyKinds[i], value)
}

// sourceBelow is the condition on the child table of join j (the source
// table at the root, else the parent of the join j hangs off) selecting
// the rows whose parent, through j, satisfies cond; up to the source
// table, through every join of j's via chain.
func (v *Verifier) sourceBelow(j *projections.Join, cond string) string {
	for {
		var child, parent []string
		for _, o := range j.On {
			child, parent = append(child, q(o.Child)), append(parent, q(o.Parent))
		}
		cond = fmt.Sprintf("(%s) IN (SELECT %s FROM %s.%s WHERE %s)", strings.Join(child, ", "), strings.Join(parent, ", "), q(j.ParentDB), q(j.ParentTbl), cond)
		if j.Via == nil {
			return cond
		}
		j = j.Via
	}
}

// republishJoinedGroups re-publishes, for groups that differ, the parent
// rows along the via chain of every joined group column: a join's state
// changes only with its parent's events, so a state that missed one is
// fixed by the parent rows, not the source rows.
func (v *Verifier) republishJoinedGroups(ctx context.Context, keys []Key, request Requester, res *RepairResult) error {
	if len(v.p.Aggregation.Joined) == 0 {
		return nil
	}
	for _, g := range keys {
		for i := range v.p.Key {
			jg := v.p.Aggregation.JoinedGroupIndex(i)
			if jg == nil {
				continue
			}
			cond := v.joinedEquals(jg, g[i], i)
			for j := jg.Join; j != nil; j = j.Via {
				table := j.ParentDB + "." + j.ParentTbl
				if err := request(ctx, table, cond); err != nil {
					return fmt.Errorf("requesting a snapshot of the rows of %s in group %v: %w", table, g, err)
				}
				res.SnapshotRequests++
				res.ParentKeys++
				if j.Via != nil {
					var child, parent []string
					for _, o := range j.On {
						child, parent = append(child, q(o.Child)), append(parent, q(o.Parent))
					}
					cond = fmt.Sprintf("(%s) IN (SELECT %s FROM %s.%s WHERE %s)", strings.Join(child, ", "), strings.Join(parent, ", "), q(j.ParentDB), q(j.ParentTbl), cond)
				}
			}
		}
	}
	return nil
}

// joinedGroupOf is the value of joined group column jg for one source
// row, as a scalar subquery through jg's via chain; outer renders the
// source row's columns (qualified: a parent may have columns of the same
// names).
func joinedGroupOf(jg *projections.JoinedGroup, outer func(string) string) string {
	var chain []*projections.Join
	for j := jg.Join; j != nil; j = j.Via {
		chain = append([]*projections.Join{j}, chain...)
	}
	var from, where []string
	for k, j := range chain {
		var on []string
		for _, o := range j.On {
			if k == 0 {
				where = append(where, fmt.Sprintf("j%d.%s = %s", j.N, q(o.Parent), outer(o.Child)))
			} else {
				on = append(on, fmt.Sprintf("j%d.%s = j%d.%s", j.N, q(o.Parent), j.Via.N, q(o.Child)))
			}
		}
		t := fmt.Sprintf("%s.%s j%d", q(j.ParentDB), q(j.ParentTbl), j.N)
		if k > 0 {
			t = "JOIN " + t + " ON " + strings.Join(on, " AND ")
		}
		from = append(from, t)
	}
	sel := jg.SQL(func(c string) string { return fmt.Sprintf("j%d.%s", jg.Join.N, q(parentColumn(jg.Join, c))) })
	return fmt.Sprintf("(SELECT %s FROM %s WHERE %s)", sel, strings.Join(from, " "), strings.Join(where, " AND "))
}
