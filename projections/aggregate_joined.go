package projections

// Aggregates whose groups come from joined parents (a group_by entry that
// names a join's column, at any depth through via): payment → staff
// (store_id). The projector cannot know a row's group: it knows the row's
// link to its root parent (the root join's on columns), not the parent's
// columns. So a contribution carries its source-side group columns and
// its links, the joined group columns left NULL; the sink completes the
// group from the join state tables in the batch's transaction, and
// regroups, when a parent changes, every contribution whose chain of
// parents passes through it (sinks/aggregate_joined.go,
// docs/design/aggregates.md "Groups from joined parents").

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/expr"
)

// JoinedGroup is a group column whose value is a joined parent's column.
type JoinedGroup struct {
	Index  int   // in Projection.Columns (and Key)
	Join   *Join // the join declaring it (its columns, for an expression)
	Column string
	// Expr computes it over Join's read columns (nil: it is Join's column
	// Column). MySQL computes it on both sides: on the sink over the join
	// state, in verify over the parent rows.
	Expr *expr.Expr
}

// SQL is the group column over join state or parent rows, col rendering
// one of the join's read columns.
func (g JoinedGroup) SQL(col func(readCol string) string) string {
	if g.Expr == nil {
		return col(g.Column)
	}
	return g.Expr.SQL(col)
}

// joinedExprProblem says why expression e over joined columns cannot be a
// group column ("" when it can): it must read the columns of one join.
func joinedExprProblem(d config.Projection, e *expr.Expr) string {
	k := -1
	for _, c := range e.Columns() {
		j := joinDeclaring(d, c)
		switch {
		case j < 0:
			return fmt.Sprintf("it reads %s, which no join declares, beside a joined parent's column: a group expression reads either the source row or one join's columns; make two group columns of it", c)
		case k >= 0 && j != k:
			return fmt.Sprintf("it reads columns of join[%d] and join[%d]: a group expression reads one join's columns; make two group columns of it", k, j)
		}
		k = j
	}
	return ""
}

// joinDeclaring is the index of the join of d whose columns declare read
// column name, -1 when none does, or when a join's on names name as a
// column of the source row: then name is that source column, and a join
// column of that name clashes with it (compileJoin says so).
func joinDeclaring(d config.Projection, name string) int {
	for _, j := range d.Join {
		if j.Via != "" {
			continue
		}
		for _, child := range j.On {
			if child == name {
				return -1
			}
		}
	}
	for k, j := range d.Join {
		if _, ok := j.Columns[name]; ok {
			return k
		}
	}
	return -1
}

// joinedGroupColumns maps the group columns of order that joins declare,
// or that are expressions over one join's columns (exprs), to their
// join's index (nil when none is).
func joinedGroupColumns(d config.Projection, order []string, exprs map[string]*expr.Expr) map[string]int {
	var out map[string]int
	for _, g := range order {
		k := joinDeclaring(d, g)
		if e, ok := exprs[g]; ok {
			k = joinDeclaring(d, e.Columns()[0])
		}
		if k >= 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[g] = k
		}
	}
	return out
}

// joinedGroupJoinErrors checks the joins of an aggregate projection with
// joined group columns: their columns are group columns only (the read
// table has no other place for them), and each hangs, directly or through
// via, off the source row.
func joinedGroupJoinErrors(d config.Projection, key string, joined map[string]int, exprs map[string]*expr.Expr) []error {
	var errs []error
	read := map[string]bool{} // join columns the group columns read
	for g := range joined {
		read[g] = true
		if e, ok := exprs[g]; ok {
			for _, c := range e.Columns() {
				read[c] = true
			}
		}
	}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, j := range d.Join {
		cols := make([]string, 0, len(j.Columns))
		for c := range j.Columns {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		for _, c := range cols {
			if !read[c] {
				bad("%s.join[%d].columns.%s: in an aggregate projection whose groups come from joined parents, a join's columns are group columns: add %s to group_by, or remove it", key, i, c, c)
			}
		}
		if len(j.Columns) == 0 && !slices.ContainsFunc(d.Join, func(o config.Join) bool { return j.As != "" && o.Via == j.As }) {
			bad("%s.columns is empty: name a group column of the parent in columns (and in group_by), or hang another join off this one with via", fmt.Sprintf("%s.join[%d]", key, i))
		}
	}
	for c := range d.Aggregates {
		if k := joinDeclaring(d, c); k >= 0 {
			bad("%s.join[%d].columns.%s: %s is also an aggregate: rename one of them", key, k, c, c)
		}
	}
	for g := range joined {
		if v, ok := d.Columns[g]; ok && joinDeclaring(d, g) >= 0 {
			bad("%s.columns.%s %q: %s is a column of join[%d]: rename one of them", key, g, v, g, joined[g])
		}
	}
	return errs
}

// joinedGroups reports whether p is an aggregate whose groups come from
// joined parents: its joins' problems, an empty columns included, are
// reported by joinedGroupJoinErrors with the fix that form needs.
func joinedGroups(p *Projection) bool {
	return p.Aggregation != nil && len(p.Aggregation.joinedFrom) > 0
}

// isJoinedGroup reports whether read column c is a group column that a
// join declares.
func (p *Projection) isJoinedGroup(c string) bool {
	if p.Aggregation == nil {
		return false
	}
	_, ok := p.Aggregation.joinedFrom[c]
	return ok
}

// linkName is the contributions table column that holds a source row's
// value of a root join's on column (child): the row's link to its parent.
func linkName(n int, parentCol string) string {
	name := fmt.Sprintf("_rs_l%d_%s", n, parentCol)
	if len(name) > 64 {
		name = fmt.Sprintf("_rs_l%d_%x", n, xxhashString(parentCol))
	}
	return name
}

// resolveJoinedGroups points each joined group column at its compiled
// join, once the joins compiled.
func resolveJoinedGroups(p *Projection) {
	ag := p.Aggregation
	if ag == nil || len(ag.joinedFrom) == 0 {
		return
	}
	ag.Joined = nil
	for i, c := range p.Columns {
		k, ok := ag.joinedFrom[c.Name]
		if !ok {
			continue
		}
		for _, j := range p.Joins {
			if j.N == k+1 {
				ag.Joined = append(ag.Joined, JoinedGroup{Index: i, Join: j, Column: c.Name, Expr: ag.joinedExpr[c.Name]})
			}
		}
	}
}

// JoinedGroupIndex is the entry of Aggregation.Joined for the group column
// at index i of the key, nil when that column is the source row's.
func (ag *Aggregation) JoinedGroupIndex(i int) *JoinedGroup {
	for k := range ag.Joined {
		if ag.Joined[k].Index == i {
			return &ag.Joined[k]
		}
	}
	return nil
}

// contributeJoined fills c's source-side group columns from e's after
// image (the joined ones stay NULL: the sink reads them from the join
// state) and its links: per join, the root joins' parent keys.
func (p *Projection) contributeJoined(c *Contribution, e event.Event, pl *imagePlan) error {
	img := e.After
	for i := range p.Columns {
		if p.Aggregation.JoinedGroupIndex(i) != nil {
			continue
		}
		v, err := p.value(img, pl, i)
		if err != nil {
			return err
		}
		if v.kind == NullValue {
			src := p.Columns[i].Source
			return fmt.Errorf("group column %q is NULL in the source row: add where: \"%s IS NOT NULL\" to projections.%s (or make %s NOT NULL in the source again) and restart", p.Key[i], src, p.Name, src)
		}
		c.Group[i] = v
	}
	c.KeyspaceID = p.keyspaceID(c.Group, e.Schema)
	for _, j := range p.Joins {
		if j.Via != nil {
			// Its parent is found through the state of the join it hangs
			// off, on the sink.
			c.Parents = append(c.Parents, ParentRef{})
			continue
		}
		ref, err := groupParent(img, j, e)
		if err != nil {
			return err
		}
		c.Parents = append(c.Parents, ref)
	}
	return nil
}

// checkJoinedGroups checks, against the source table, that each root
// join's on names a column of it, and makes each joined group column's
// read definition NOT NULL (a row whose parent is missing, or holds NULL
// there, is in no group).
func (p *Projection) checkJoinedGroups(src *sourceTable, parents map[*Join]*sourceTable, out *Types) []error {
	if p.Aggregation == nil || len(p.Aggregation.Joined) == 0 {
		return nil
	}
	var errs []error
	for _, j := range p.Joins {
		if j.Via != nil || src == nil {
			continue
		}
		for _, o := range j.On {
			if ok, cols := src.has(o.Child); !ok {
				errs = append(errs, fmt.Errorf("projections.%s.join[%d].on.%s: source column %q does not exist in %s.%s%s: name the column of %s.%s holding %s.%s's %s",
					p.Name, j.N-1, o.Parent, o.Child, p.SourceDB, p.SourceTbl, cols, p.SourceDB, p.SourceTbl, j.ParentDB, j.ParentTbl, o.Parent))
			}
		}
	}
	for _, g := range p.Aggregation.Joined {
		if src != nil {
			if ok, _ := src.has(g.Column); ok {
				errs = append(errs, fmt.Errorf("projections.%s.group_by %q names both a column of %s.%s and join[%d]'s column %s: rename the join's column (e.g. columns: {%s_%s: …}) and group by that name, or remove it from the join to group by the source column",
					p.Name, g.Column, p.SourceDB, p.SourceTbl, g.Join.N-1, g.Column, g.Join.ParentTbl, g.Column))
			}
		}
		if g.Expr != nil {
			def, err := typeJoinedExpr(g, parents[g.Join])
			if err != nil {
				errs = append(errs, fmt.Errorf("projections.%s.group_by %q: %w", p.Name, g.Expr.String(), err))
				continue
			}
			out.Read[g.Column] = def + " NULL"
		}
		if def, ok := out.Read[g.Column]; ok {
			out.GroupRead = setDef(out.GroupRead, g.Column, strings.TrimSuffix(strings.TrimSuffix(def, " NOT NULL"), " NULL")+" NOT NULL")
		}
	}
	return errs
}

func setDef(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// JoinedGroupsPlan says, for `readside plan`, where each joined group
// column comes from and what a change of a parent on its chain costs:
// the tables a regroup reads and that the projection's batches that
// change a parent apply alone (per shard).
func (p *Projection) JoinedGroupsPlan() []string {
	if p.Aggregation == nil || len(p.Aggregation.Joined) == 0 {
		return nil
	}
	var out []string
	for _, g := range p.Aggregation.Joined {
		var chain, states []string
		for j := g.Join; j != nil; j = j.Via {
			chain = append([]string{j.ParentDB + "." + j.ParentTbl}, chain...)
			states = append([]string{j.StateTable(p)}, states...)
		}
		out = append(out, fmt.Sprintf("group column %s from %s (via %s): a change of a row on that chain regroups every contribution below it, found through %s and the link index of %s; a row whose parent is missing, or holds NULL there, is in no group",
			g.Column, chain[len(chain)-1], strings.Join(chain, " -> "), strings.Join(states, ", "), p.ContributionsTable()))
	}
	return append(out, "groups from joined parents: a batch that changes a parent on a chain applies alone per shard (its regroup reads the join state as committed); the batches that change none apply at once")
}

// typeJoinedExpr types a joined group expression over its join's parent
// table (nil when that table could not be read: its problem is named
// already), giving its column definition without nullability.
func typeJoinedExpr(g JoinedGroup, parent *sourceTable) (string, error) {
	if parent == nil {
		return "", errors.New("its join's parent table could not be read")
	}
	source := map[string]string{}
	for _, c := range g.Join.Columns {
		source[c.Name] = c.Source
	}
	fresh, err := expr.Parse(g.Expr.String())
	if err != nil {
		return "", err
	}
	typ, err := fresh.Check(func(name string) (expr.Column, bool) {
		def, ok := parent.types[source[name]]
		if !ok {
			return expr.Column{}, false
		}
		return expr.Column{Name: name, Def: def, Nullable: true}, true
	})
	if err != nil {
		return "", err
	}
	return typ.Column, nil
}
