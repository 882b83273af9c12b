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
	"fmt"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
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
	a := childAlias(i)
	var on []string
	for _, o := range c.On {
		on = append(on, a+"."+q(o.Child)+" = s."+q(o.Parent))
	}
	return " FROM " + q(c.SourceDB) + "." + q(c.SourceTbl) + " " + a + " WHERE " + strings.Join(on, " AND ")
}

func childArraySQL(i int, c *projections.Children, pk []string) string {
	a := childAlias(i)
	col := func(name string) string { return a + "." + q(name) }
	var members, order []string
	for _, m := range c.Columns {
		members = append(members, sqlquote.Literal(m.Name), m.SQL(col))
	}
	for _, o := range c.OrderBy {
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
	return "(SELECT " + agg + ")" + childFrom(i, c) + ")"
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
		rows, err := v.src.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
			c.SourceDB, c.SourceTbl)
		if err != nil {
			return fmt.Errorf("reading the primary key of %s.%s (children %s): %w", c.SourceDB, c.SourceTbl, c.Name, err)
		}
		for rows.Next() {
			var col string
			if err := rows.Scan(&col); err != nil {
				rows.Close()
				return err
			}
			keys[i] = append(keys[i], col)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(keys[i]) == 0 {
			return fmt.Errorf("projections.%s.children.%s: %s.%s has no primary key on the source (or the source user cannot see it): children need one to order ties and to key their state", v.p.Name, c.Name, c.SourceDB, c.SourceTbl)
		}
	}
	v.pl.childKeys = keys
	v.pl = newPlan(v.p, keys)
	return nil
}

// childWheres selects, per children entry whose columns differ in d (or
// every entry, when the parent row is missing), the child rows of d's
// parent on the source: re-published, they reset the sink's child state
// of that parent at new versions, and the refresh rebuilds the array.
// An entry whose link value is NULL or not among the compared columns
// has nothing to re-publish.
func (v *Verifier) childWheres(d Diff) map[int]string {
	out := map[int]string{}
	for i, c := range v.p.Children {
		differs := d.Kind == "missing"
		for _, col := range d.Columns {
			differs = differs || col.Name == c.Name || col.Name == c.CountColumn
		}
		if !differs {
			continue
		}
		var ands []string
		for _, o := range c.On {
			cell := v.parentCell(o.Parent, d.srcRow)
			if cell == nil {
				ands = nil
				break
			}
			lit := literal(kText, *cell)
			if integer.MatchString(*cell) {
				lit = *cell
			}
			ands = append(ands, q(o.Child)+" = "+lit)
		}
		if len(ands) > 0 {
			out[i] = "(" + strings.Join(ands, " AND ") + ")"
		}
	}
	return out
}

// parentCell is the value of parent source column col in a compared
// source row: the read column that copies it (the children compile
// requires one).
func (v *Verifier) parentCell(col string, row []*string) *string {
	for i, c := range v.p.Columns {
		if c.Source == col && !c.Computed() && i < len(row) {
			return row[i]
		}
	}
	return nil
}
