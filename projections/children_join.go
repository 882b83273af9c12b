package projections

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// A children entry's joins (`children.<name>.join`) copy columns of each
// child row's own parents into its element (film_actor → actor's names).
// They are Joins like a projection's, but their parent's state is joined
// to the child state when an array is rebuilt, not copied into rows: the
// sink keeps the latest parent rows in a join state table per join, and
// a parent change refreshes the arrays of the parents whose children
// point at it (docs/design/children.md, "Joined columns in elements").

// Member is one member of a children array's element: a child column,
// or (Join set) a column of one of the child's parents.
type Member struct {
	Name   string
	Source string // child column, or the Join's parent column
	Join   *Join  // nil: a child column
}

// Members are the element's members in JSON_OBJECT order: the child's
// columns, then each join's, in declaration order.
func (c *Children) Members() []Member {
	var out []Member
	for _, m := range c.Columns {
		out = append(out, Member{Name: m.Name, Source: m.Source})
	}
	for _, j := range c.Joins {
		for _, col := range j.Columns {
			if !col.Carried() {
				out = append(out, Member{Name: col.Name, Source: col.Source, Join: j})
			}
		}
	}
	return out
}

// OrderJoin is the join whose element member order_by entry o names (nil
// when o is a child column).
func (c *Children) OrderJoin(o string) *Join {
	for _, j := range c.Joins {
		for _, col := range j.Columns {
			if col.Name == o && !col.Carried() {
				return j
			}
		}
	}
	return nil
}

// JoinStateTable is the sink table of the latest rows of join j's parent
// table (and the versions of absent ones), on every shard; named after
// the read table, as the child state is.
func (c *Children) JoinStateTable(p *Projection, j *Join) string {
	return childTableName("_readside_childjoin_", p.Table, fmt.Sprintf("%s_%d", c.Name, j.N))
}

// JoinTruncationName is the `_readside_truncations` row of join j's
// parent table.
func (c *Children) JoinTruncationName(p *Projection, j *Join) string {
	return fmt.Sprintf("%s#child_%s_join%d", p.Name, c.Name, j.N)
}

// compileChildJoins compiles cd.Join into c.Joins. Every problem names
// its key and its fix.
func compileChildJoins(cfg config.Config, c *Children, ck string, cd config.Children, captured map[string]bool) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	members := map[string]string{}
	for m := range cd.Columns {
		members[m] = ck + ".columns"
	}
	for i, jd := range cd.Join {
		key := fmt.Sprintf("%s.join[%d]", ck, i)
		j := joinHead(cfg, joinSite{key: key, from: cd.From, own: "the child table itself", reach: "the arrays", alias: "a"}, i, jd, cd.Join, captured, bad)
		if j == nil {
			continue
		}
		if len(jd.On) == 0 {
			bad("%s.on is empty: map each parent key column to the child column holding it, e.g. {actor_id: actor_id}", key)
			j.onBroken = true
		}
		if jd.Via != "" {
			j.Via = childVia(c, cd, i, jd, key, bad)
			if j.Via == nil {
				j.onBroken = true
			}
		}
		parents := make([]string, 0, len(jd.On))
		for pc := range jd.On {
			parents = append(parents, pc)
		}
		sort.Strings(parents)
		for _, pc := range parents {
			child, okChild := columnName(jd.On[pc])
			parent, okParent := columnName(pc)
			if !okChild || !okParent {
				bad("%s.on.%s %q: on maps a parent column to a column by name: name plain columns, e.g. {actor_id: actor_id}", key, pc, jd.On[pc])
				j.onBroken = true
				continue
			}
			on := JoinOn{Parent: parent, Child: child}
			if j.Via != nil {
				on.Read = j.Via.carry(child)
			} else if j.onBroken && jd.Via != "" {
				continue
			}
			j.On = append(j.On, on)
		}
		if len(jd.Columns) == 0 {
			bad("%s.columns is empty: map element members to parent columns, e.g. {first_name: first_name}", key)
		}
		names := make([]string, 0, len(jd.Columns))
		for m := range jd.Columns {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			src, ok := columnName(jd.Columns[m])
			switch {
			case !ok:
				bad("%s.columns.%s %q: an element member copies one parent column by name: name a column of %s (one whose name reads as an expression in backticks, `i-j`)", key, m, jd.Columns[m], jd.From)
				continue
			case strings.HasPrefix(m, carriedPrefix):
				bad("%s.columns.%s: names starting with %s are readside's own: rename the member", key, m, carriedPrefix)
				continue
			case members[m] != "":
				bad("%s.columns.%s: %s is already an element member (%s): rename one of them", key, m, m, members[m])
				continue
			}
			members[m] = key + ".columns"
			j.Columns = append(j.Columns, Column{Name: m, Source: src})
		}
		c.Joins = append(c.Joins, j)
	}
	return errs
}

// childVia finds the earlier children join that join i hangs off, or
// reports why it cannot.
func childVia(c *Children, cd config.Children, i int, jd config.Join, key string, bad func(string, ...any)) *Join {
	at := slices.IndexFunc(cd.Join, func(o config.Join) bool { return o.As == jd.Via })
	switch {
	case at < 0:
		bad("%s.via %q: no join of this children entry has as: %s: set as: %s on the join this one hangs off, or correct via", key, jd.Via, jd.Via, jd.Via)
		return nil
	case at >= i:
		bad("%s.via %q names join[%d], not an earlier join: a join hangs off one declared before it; move join[%d] before join[%d]", key, jd.Via, at, at, i)
		return nil
	}
	for _, o := range c.Joins {
		if o.N == at+1 {
			return o
		}
	}
	return nil // join[at] had errors of its own, reported there
}

// joinLinkColumns are the child columns the root joins' on name: the
// child state keeps them to find each element's parents.
func (c *Children) joinLinkColumns() []string {
	var out []string
	for _, j := range c.Joins {
		if j.Via != nil {
			continue
		}
		for _, on := range j.On {
			out = append(out, on.Child)
		}
	}
	return out
}

// JoinDependents are the joins of c hanging off j directly.
func (c *Children) JoinDependents(j *Join) []*Join {
	var out []*Join
	for _, o := range c.Joins {
		if o.Via == j {
			out = append(out, o)
		}
	}
	return out
}

// collectChildJoin adds the effect of an event of children entry i's
// join k's parent table to b: the parent's new state under its key, its
// absence, or the table's truncation.
func (p *Projection) collectChildJoin(b *Batch, i, k int, r *Record, e event.Event) error {
	j := p.Children[i].Joins[k]
	ws, err := j.writes(k, e)
	if err != nil {
		return fmt.Errorf("children %s join[%d]: %w", p.Children[i].Name, k, err)
	}
	for _, w := range ws {
		b.ChildWrites = append(b.ChildWrites, ChildWrite{Child: i, Join: j.N, SourceKey: w.Key, Version: w.Version,
			Truncate: w.Truncate, Link: w.KeyValues, LinkKey: w.Key, Values: w.Values, From: r})
	}
	return nil
}

// checkChildJoins checks c's joins against the source schema (child is
// the child table) and returns their sink types.
func checkChildJoins(read func(db, tbl string) (*sourceTable, error), p *Projection, c *Children, ck string, child *sourceTable) ([]ChildJoinTypes, []error, error) {
	var out []ChildJoinTypes
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	tables := map[*Join]*sourceTable{}
	for _, j := range c.Joins {
		jt := ChildJoinTypes{Key: map[string]string{}, State: map[string]string{}, JSON: map[string]bool{}}
		out = append(out, jt)
		key := fmt.Sprintf("%s.join[%d]", ck, j.N-1)
		parent, err := read(j.ParentDB, j.ParentTbl)
		if err != nil {
			return out, errs, err
		}
		if parent == nil {
			bad("%s.from: %s.%s does not exist on the source: correct from, create the table, or grant the source user SELECT on it", key, j.ParentDB, j.ParentTbl)
			continue
		}
		tables[j] = parent
		below, belowName := child, c.SourceDB+"."+c.SourceTbl
		if j.Via != nil {
			below, belowName = tables[j.Via], j.Via.ParentDB+"."+j.Via.ParentTbl
		}
		var on []string
		for _, o := range j.On {
			on = append(on, o.Parent)
			if ok, cols := parent.has(o.Parent); !ok {
				bad("%s.on.%s: parent column %q does not exist in %s.%s%s: name the parent's primary key column", key, o.Parent, o.Parent, j.ParentDB, j.ParentTbl, cols)
			} else {
				jt.Key[o.Parent] = parent.def(o.Parent, false)
			}
			if below == nil {
				continue
			}
			if ok, cols := below.has(o.Child); !ok {
				bad("%s.on.%s: column %q does not exist in %s%s: name the column of %s holding %s.%s's %s", key, o.Parent, o.Child, belowName, cols, belowName, j.ParentDB, j.ParentTbl, o.Parent)
			} else if keyType, ok := parent.types[o.Parent]; ok && slices.Contains(parent.pk, o.Parent) {
				if err := linkTypeError(key+".on."+o.Parent, belowName, o.Child, below.types[o.Child], j.ParentDB+"."+j.ParentTbl, o.Parent, keyType, linkMatched); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if !j.onBroken && len(parent.pk) > 0 && !sameSet(on, parent.pk) {
			bad("%s.on names parent column(s) %v, but %s.%s's primary key is %v: join on the whole primary key, so each child has at most one such parent", key, on, j.ParentDB, j.ParentTbl, parent.pk)
		}
		if len(parent.pk) == 0 {
			bad("%s.from: %s.%s has no primary key: join a table with one", key, j.ParentDB, j.ParentTbl)
		}
		for _, col := range j.Columns {
			ok, cols := parent.has(col.Source)
			switch {
			case !ok && col.Carried():
				// checked as the dependent's on, above
			case !ok:
				bad("%s.columns.%s: column %q does not exist in %s.%s%s: name one of its columns", key, col.Name, col.Source, j.ParentDB, j.ParentTbl, cols)
			case binaryColumn(parent.types[col.Source]) && !col.Carried():
				bad("%s.columns.%s: %s.%s.%s is %s, binary: MariaDB's JSON_OBJECT writes its bytes unescaped, which is no JSON; leave it out, or nest a text column holding it",
					key, col.Name, j.ParentDB, j.ParentTbl, col.Source, parent.types[col.Source])
			default:
				jt.State[col.Name] = parent.def(col.Source, true)
				jt.JSON[col.Name] = parent.json[col.Source]
			}
		}
	}
	return out, errs, nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// ChildJoinTypes are the sink column definitions of one children join's
// state table: the parent key columns (NOT NULL) and, by the join's
// column name, each copied column (NULL-able: an absent parent keeps only
// its version).
type ChildJoinTypes struct {
	Key   map[string]string
	State map[string]string
	JSON  map[string]bool
}
