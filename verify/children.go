package verify

// Nested children (projections.Children): each entry adds two compared
// columns to the parent's row, computed on the source per parent row by
// the statement the declaration means:
//
//	(SELECT JSON_ARRAYAGG(JSON_OBJECT('sku', c.sku, …) ORDER BY <order_by>, <child pk> LIMIT n)
//	   FROM child c WHERE c.<link> = s.<parent col> …)
//	(SELECT COUNT(*) FROM child c WHERE …)
//
// MariaDB renders the JSON itself on both sides (the sink builds the
// array with the same functions over its child state), so the texts are
// compared byte for byte like any other column. Ties of order_by are
// broken by the child's primary key, read from the source at the start
// of a run (childKeys). Each subquery reads the child rows of one parent:
// without an index on the link columns on the source it scans the child
// table once per parent row.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/readside/readside/internal/sourcedb"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// childColumns are the compared array and count columns of the children
// entries, after the projection's own and joined columns.
func (pl *plan) childColumns() []column {
	var out []column
	for i, c := range pl.p.Children {
		var pk []string
		if i < len(pl.childKeys) {
			pk = pl.childKeys[i]
		}
		out = append(out, column{Read: c.Name, Src: childArraySQL(i, c, pk)}, column{Read: c.CountColumn, Src: childCountSQL(i, c)})
	}
	return out
}

func childAlias(i int) string { return fmt.Sprintf("ch%d", i) }

// childFrom is the FROM and WHERE of entry i's child rows of the parent
// row s.
func childFrom(i int, c *projections.Children) string {
	return childFromJoined(i, c, false)
}

// childJoinAlias is the alias of entry i's join j's parent table.
func childJoinAlias(i int, j *projections.Join) string { return fmt.Sprintf("ch%dj%d", i, j.N) }

// childFromJoined is childFrom, with the child rows LEFT JOINed to their
// parents (children.<name>.join) when joined.
func childFromJoined(i int, c *projections.Children, joined bool) string {
	a := childAlias(i)
	var on []string
	for _, o := range c.On {
		on = append(on, a+"."+q(o.Child)+" = s."+q(o.Parent))
	}
	from := " FROM " + q(c.SourceDB) + "." + q(c.SourceTbl) + " " + a
	for _, j := range c.Joins {
		if !joined {
			break
		}
		below := a
		if j.Via != nil {
			below = childJoinAlias(i, j.Via)
		}
		var ands []string
		for _, o := range j.On {
			ands = append(ands, childJoinAlias(i, j)+"."+q(o.Parent)+" = "+below+"."+q(o.Child))
		}
		from += " LEFT JOIN " + q(j.ParentDB) + "." + q(j.ParentTbl) + " " + childJoinAlias(i, j) + " ON " + strings.Join(ands, " AND ")
	}
	return from + " WHERE " + strings.Join(on, " AND ")
}

func childArraySQL(i int, c *projections.Children, pk []string) string {
	a := childAlias(i)
	col := func(name string) string { return a + "." + q(name) }
	var members, order []string
	member := func(m projections.Member) string {
		if m.Join != nil {
			return childJoinAlias(i, m.Join) + "." + q(m.Source)
		}
		return col(m.Source)
	}
	for _, m := range c.Members() {
		v := member(m)
		if c.UTF8Member(m.Name) {
			v = "CONVERT(" + v + " USING utf8mb4)" // as the sink builds it
		}
		members = append(members, sqlquote.Literal(m.Name), v)
	}
	for _, o := range c.OrderBy {
		if j := c.OrderJoin(o); j != nil {
			for _, m := range c.Members() {
				if m.Join == j && m.Name == o {
					order = append(order, member(m))
				}
			}
			continue
		}
		order = append(order, col(o))
	}
	for _, k := range pk {
		order = append(order, col(k))
	}
	agg := "JSON_ARRAYAGG(JSON_OBJECT(" + strings.Join(members, ", ") + ")"
	if len(order) > 0 {
		agg += " ORDER BY " + strings.Join(order, ", ")
	}
	if c.Limit > 0 {
		agg += fmt.Sprintf(" LIMIT %d", c.Limit)
	}
	return "(SELECT " + agg + ")" + childFromJoined(i, c, true) + ")"
}

func childCountSQL(i int, c *projections.Children) string {
	return "(SELECT COUNT(*)" + childFrom(i, c) + ")"
}

// learnChildKeys reads the primary key of each children entry's table
// from the source.
func (v *Verifier) learnChildKeys(ctx context.Context) error {
	if len(v.p.Children) == 0 {
		return nil
	}
	keys := make([][]string, len(v.p.Children))
	for i, c := range v.p.Children {
		var err error
		if keys[i], err = keyColumns(ctx, v.src, c.SourceDB, c.SourceTbl, v.p.SourceKeyOf(c.SourceDB, c.SourceTbl)); err != nil {
			return fmt.Errorf("projections.%s.children.%s: %w", v.p.Name, c.Name, err)
		}
	}
	v.pl.childKeys = keys
	v.pl = newPlan(v.p, keys)
	return nil
}

// keyColumns are the columns the tailer keys db.table's events by: the
// configured ones (source.keys) when set, else its primary key.
func keyColumns(ctx context.Context, src *sql.DB, db, table string, configured []string) ([]string, error) {
	if configured != nil {
		return configured, nil
	}
	return primaryKey(ctx, src, db, table)
}

// primaryKey reads the primary key columns of db.table on the source.
func primaryKey(ctx context.Context, src *sql.DB, db, table string) ([]string, error) {
	rows, err := src.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'"+sourcedb.NotRowEnd("STATISTICS")+" ORDER BY SEQ_IN_INDEX", db, table)
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var col string
		if err := rows.Scan(&col); err != nil {
			return nil, err
		}
		out = append(out, col)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s.%s has no primary key on the source (or the source user cannot see it): readside keys rows by it", db, table)
	}
	return out, nil
}

// childLinks are, per children entry whose columns differ in d (or
// every entry, when the parent row is missing), the link of d's parent:
// its values of the entry's On columns. An entry whose link holds a NULL
// has no children to repair.
func (v *Verifier) childLinks(d Diff) map[int][]string {
	out := map[int][]string{}
	for i, c := range v.p.Children {
		differs := d.Kind == "missing"
		for _, col := range d.Columns {
			differs = differs || col.Name == c.Name || col.Name == c.CountColumn
		}
		if !differs {
			continue
		}
		var link []string
		for _, o := range c.On {
			cell := v.readCell(o.Read, d.srcRow)
			if cell == nil {
				link = nil
				break
			}
			link = append(link, *cell)
		}
		if link != nil {
			out[i] = link
		}
	}
	return out
}

// childWhere selects the child rows of entry i with link on the source.
func (v *Verifier) childWhere(i int, link []string) string {
	var ands []string
	for k, o := range v.p.Children[i].On {
		lit := literal(kText, link[k])
		if integer.MatchString(link[k]) {
			lit = link[k]
		}
		ands = append(ands, q(o.Child)+" = "+lit)
	}
	return "(" + strings.Join(ands, " AND ") + ")"
}

// readCell is read column col's cell in a compared source row.
func (v *Verifier) readCell(col string, row []*string) *string {
	for i, c := range v.pl.cols {
		if c.Read == col && i < len(row) {
			return row[i]
		}
	}
	return nil
}

// repairChildState withdraws, on every shard (each keeps every child's
// state), the state of the children linked to links (per entry) that no
// longer exist on the source, and refreshes those links' arrays
// (sinks.RepairChildren). It returns the states withdrawn.
func (v *Verifier) repairChildState(ctx context.Context, links map[int][][]string) (int, error) {
	withdrawn := 0
	for i, ls := range links {
		c := v.p.Children[i]
		pk, err := sourceKeyOf(ctx, v.src, c.SourceDB, c.SourceTbl, v.p.SourceKeyOf(c.SourceDB, c.SourceTbl))
		if err != nil {
			return withdrawn, err
		}
		bound := make([][]any, len(ls))
		for j, l := range ls {
			for _, x := range l {
				bound[j] = append(bound[j], x)
			}
		}
		for _, sh := range v.sink.Shards {
			members, err := sh.ChildMembers(ctx, v.p, i, bound)
			if err != nil {
				return withdrawn, err
			}
			keys := make([][]string, len(members))
			for j, m := range members {
				keys[j] = m.PK
			}
			found, err := pk.present(ctx, v.src, keys)
			if err != nil {
				return withdrawn, err
			}
			var gone []sinks.ChildMember
			for j, m := range members {
				if !found[j] {
					gone = append(gone, m)
				}
			}
			if err := sh.RepairChildren(ctx, v.p, i, gone, bound); err != nil {
				return withdrawn, fmt.Errorf("repairing the %s of %d parents of %s on shard %s: %w", c.Name, len(ls), v.p.Table, sh.Range.Text, err)
			}
			withdrawn += len(gone)
		}
	}
	return withdrawn, nil
}

// childJoinWhere selects the rows of join j's parent table that the child
// rows matching cond (over the child table's columns) point at, through
// the joins j hangs off.
func childJoinWhere(c *projections.Children, j *projections.Join, cond string) string {
	var parent, below []string
	for _, o := range j.On {
		parent = append(parent, q(o.Parent))
		below = append(below, q(o.Child))
	}
	from, where := q(c.SourceDB)+"."+q(c.SourceTbl), cond
	if j.Via != nil {
		from, where = q(j.Via.ParentDB)+"."+q(j.Via.ParentTbl), childJoinWhere(c, j.Via, cond)
	}
	return "(" + strings.Join(parent, ", ") + ") IN (SELECT " + strings.Join(below, ", ") + " FROM " + from + " WHERE " + where + ")"
}
