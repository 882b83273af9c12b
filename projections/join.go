package projections

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"github.com/readside/readside/config"
)

// Join is one compiled `join:` entry: the parent table whose columns are
// copied into every read row that references it.
type Join struct {
	N         int // 1-based position in the declaration
	ParentDB  string
	ParentTbl string
	Topic     string
	// As is the join's alias (config `as`), "" when it has none.
	As string
	// Via is the earlier join this one hangs off (config `via`): its
	// parent is this join's child. nil: the child is the projection's
	// source row.
	Via *Join
	// On pairs each parent column with the read column holding the child's
	// value for it: a source column mapped in columns, or, for a join
	// Via another, the column of Via's parent that Via carries (Carried).
	On []JoinOn
	// Columns map read columns to parent columns. The columns that later
	// joins hang off come last, under hidden names (Carried): they are
	// copied like the others, so a read row always holds the key of the
	// parent's parent it shows.
	Columns []Column
	// onBroken: on did not compile (Compile said why), so SourceColumns
	// does not check that it names the parent's primary key.
	onBroken bool
}

// JoinOn is one column pair of a join condition.
type JoinOn struct {
	Parent string // parent source column
	Child  string // child column: of the source row, or of Via's parent
	Read   string // read column that copies Child
}

// Carried reports whether c is a column the join copies only for the
// joins that hang off it (a hidden read column, not declared).
func (c Column) Carried() bool { return strings.HasPrefix(c.Name, carriedPrefix) }

// carriedPrefix starts the hidden read column that holds a via key:
// `_rs_j<N>_<parent column>`, in the _rs_ namespace no declared column
// may use (readColumnProblem).
const carriedPrefix = "_rs_j"

// carriedName is the hidden read column through which join n carries its
// parent's column col.
func carriedName(n int, col string) string {
	name := fmt.Sprintf("%s%d_%s", carriedPrefix, n, col)
	if len(name) > 62 { // the state table's c_ column of it is 64 at most
		name = fmt.Sprintf("%s%d_%x", carriedPrefix, n, xxhashString(col))
	}
	return name
}

// Root is the join at the start of j's via chain: the one whose child is
// the projection's source row.
func (j *Join) Root() *Join {
	for j.Via != nil {
		j = j.Via
	}
	return j
}

// Dependents are the joins that hang off j directly or through others, in
// declaration order.
func (p *Projection) Dependents(j *Join) []*Join {
	var out []*Join
	for _, o := range p.Joins {
		for v := o.Via; v != nil; v = v.Via {
			if v == j {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

// VersionColumn holds, per read row, the version of the parent row whose
// columns it shows: fan-out only moves it forward.
func (j *Join) VersionColumn() string { return fmt.Sprintf("_rs_v_join%d", j.N) }

// StateTable is the sink table holding the latest parent rows (and the
// versions of absent ones) for this join, on every shard.
func (j *Join) StateTable(p *Projection) string {
	name := fmt.Sprintf("_readside_join_%s_%d", p.Name, j.N)
	if len(name) > 64 {
		name = fmt.Sprintf("_readside_join_%x_%d", xxhashString(p.Name), j.N)
	}
	return name
}

// joinSite is where a join is declared: its config key, the declaring
// table (from), how messages name it (own), what its parent's changes
// update (reach) and an alias to suggest.
type joinSite struct{ key, from, own, reach, alias string }

// joinHead checks what every join declaration has before its on and
// columns — its table, captured and not the declaring one, and its alias
// among the earlier joins' — and returns the join with its table set; nil
// when from names no table.
func joinHead(cfg config.Config, site joinSite, i int, jd config.Join, earlier []config.Join, captured map[string]bool, bad func(string, ...any)) *Join {
	db, tbl, ok := config.SplitTable(jd.From)
	if !ok {
		bad("%s.from %q: want db.table", site.key, jd.From)
		return nil
	}
	if !captured[jd.From] {
		bad("%s.from %s is not in source.tables: add it there so its changes reach %s", site.key, jd.From, site.reach)
	}
	if jd.From == site.from {
		bad("%s.from %s joins %s: self-joins are not supported", site.key, jd.From, site.own)
	}
	if jd.As != "" {
		if why := identProblem(jd.As); why != "" {
			bad("%s.as %q: %s: name the join with a plain identifier, e.g. %s", site.key, jd.As, why, site.alias)
		}
		for k, other := range earlier[:i] {
			if other.As == jd.As {
				bad("%s.as %q: join[%d] has the same as: give each join its own alias", site.key, jd.As, k)
			}
		}
	}
	return &Join{N: i + 1, ParentDB: db, ParentTbl: tbl, Topic: TopicOf(cfg, db, tbl), As: jd.As}
}

// compileJoin checks one join entry. Every problem names its key.
func compileJoin(cfg config.Config, p *Projection, d config.Projection, i int, jd config.Join, captured map[string]bool) (*Join, []error) {
	var errs []error
	key := fmt.Sprintf("projections.%s.join[%d]", p.Name, i)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	j := joinHead(cfg, joinSite{key: key, from: d.From, own: "the projection's own table", reach: "the join", alias: "c"}, i, jd, d.Join, captured, bad)
	if j == nil {
		return nil, errs
	}
	if len(jd.On) == 0 {
		bad("%s.on is empty: map each parent key column to this projection's source column, e.g. {id: customer_id}", key)
		j.onBroken = true
	}
	var via *Join
	if jd.Via != "" {
		if via = resolveVia(p, d, i, jd, bad); via == nil {
			jd.On = nil // its columns are not the source's: nothing to check
			j.onBroken = true
		}
	}
	parents := make([]string, 0, len(jd.On))
	for pc := range jd.On {
		parents = append(parents, pc)
	}
	sort.Strings(parents)
	for _, pc := range parents {
		child := jd.On[pc]
		if via != nil {
			j.On = append(j.On, JoinOn{Parent: pc, Child: child, Read: via.carry(child)})
			continue
		}
		if p.Aggregation != nil && len(p.Aggregation.joinedFrom) > 0 {
			// The contributions table keeps the row's link to its parent.
			j.On = append(j.On, JoinOn{Parent: pc, Child: child, Read: linkName(j.N, pc)})
			continue
		}
		read := ""
		for _, c := range p.Columns {
			if c.Source == child {
				read = c.Name
				break
			}
		}
		if read == "" {
			if p.Aggregation == nil { // compileAggregate names its own fix
				bad("%s.on.%s: source column %q is not mapped in projections.%s.columns: add it (fan-out finds the read rows by it)%s", key, pc, child, p.Name, copiesInstead("projections."+p.Name, d, child))
			}
			j.onBroken = true
			continue
		}
		j.On = append(j.On, JoinOn{Parent: pc, Child: child, Read: read})
	}
	j.Via = via
	if len(jd.Columns) == 0 && !joinedGroups(p) {
		bad("%s.columns is empty: map read columns to parent columns, e.g. {customer_name: name}", key)
	}
	names := make([]string, 0, len(jd.Columns))
	for c := range jd.Columns {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		if where := declaredColumn(p, d, c); where != "" {
			bad("%s.columns.%s: %s is already a column of %s: rename one of them (or leave it out of this join's columns, when it holds the same value)", key, c, c, where)
			continue
		}
		if why := readColumnProblem(c); why != "" {
			bad("%s.columns.%s: %s: rename the column", key, c, why)
			continue
		}
		for _, other := range p.Joins {
			for _, oc := range other.Columns {
				if oc.Name == c {
					bad("%s.columns.%s: already filled by join[%d]: rename one of them", key, c, other.N-1)
				}
			}
		}
		j.Columns = append(j.Columns, Column{Name: c, Source: jd.Columns[c]})
	}
	return j, errs
}

// declaredColumn is the key that already declares read column c of p
// ("" when none does): its columns, or an aggregate's group_by (whose
// group columns need not be in columns). A key column missing from
// columns declares nothing: Compile names that problem.
func declaredColumn(p *Projection, d config.Projection, c string) string {
	key := "projections." + p.Name
	if _, ok := d.Columns[c]; ok {
		return key + ".columns"
	}
	if p.Aggregation != nil && p.column(c).Name != "" && !p.isJoinedGroup(c) {
		return key + ".group_by (a group column)"
	}
	return ""
}

// copiesInstead is the hint for a source column col that no read column
// of d copies while a read column named col copies another source column
// ({author_id: authr_id}): a misspelt source column there is the likelier
// cause ("" otherwise).
func copiesInstead(key string, d config.Projection, col string) string {
	v, ok := d.Columns[col]
	if !ok || strings.TrimSpace(v) == col {
		return ""
	}
	return fmt.Sprintf("; %s.columns.%s copies source column %q, not %s: if %q is misspelt, map %s: %s", key, col, v, col, v, col, col)
}

// resolveVia finds the earlier join that join i hangs off (jd.Via), or
// reports why it cannot: no join has that alias, the alias is declared
// after its use, or the via chain comes back to join i.
func resolveVia(p *Projection, d config.Projection, i int, jd config.Join, bad func(string, ...any)) *Join {
	key := fmt.Sprintf("projections.%s.join[%d].via", p.Name, i)
	at := -1
	for k, o := range d.Join {
		if o.As == jd.Via {
			at = k
			break
		}
	}
	switch {
	case at < 0:
		bad("%s %q: no join of projections.%s has as: %s: set as: %s on the join this one hangs off, or correct via", key, jd.Via, p.Name, jd.Via, jd.Via)
		return nil
	case at == i || viaCycle(d.Join, i):
		bad("%s %q: the via chain of join[%d] comes back to itself: a join hangs off an earlier join, ending at one without via", key, jd.Via, i)
		return nil
	case at > i:
		bad("%s %q names join[%d], declared after it: move join[%d] before join[%d]", key, jd.Via, at, at, i)
		return nil
	}
	for _, o := range p.Joins {
		if o.N == at+1 {
			return o
		}
	}
	return nil // join[at] had errors of its own, reported there
}

// viaCycle reports whether following via from join i comes back to it.
func viaCycle(joins []config.Join, i int) bool {
	seen := map[int]bool{}
	for k := i; ; {
		if seen[k] {
			return k == i
		}
		seen[k] = true
		next := -1
		for n, o := range joins {
			if joins[k].Via != "" && o.As == joins[k].Via {
				next = n
				break
			}
		}
		if next < 0 {
			return false
		}
		k = next
	}
}

// carry makes j copy its parent's column col into every read row, under a
// hidden name, for a join that hangs off j, and returns that name.
func (j *Join) carry(col string) string {
	name := carriedName(j.N, col)
	for _, c := range j.Columns {
		if c.Name == name {
			return name
		}
	}
	j.Columns = append(j.Columns, Column{Name: name, Source: col})
	return name
}

// checkVia checks, against the source schema, that the parent of the join
// j hangs off (via, nil when that table could not be read) has every
// column j's on names.
func checkVia(p *Projection, j *Join, via *sourceTable) []error {
	if j.Via == nil || via == nil {
		return nil
	}
	var errs []error
	for _, o := range j.On {
		if ok, cols := via.has(o.Child); !ok {
			errs = append(errs, fmt.Errorf("projections.%s.join[%d].on.%s: column %q does not exist in %s.%s, the parent of join[%d] (as: %s) this join hangs off%s: name one of its columns, the one holding %s.%s's %s",
				p.Name, j.N-1, o.Parent, o.Child, j.Via.ParentDB, j.Via.ParentTbl, j.Via.N-1, j.Via.As, cols, j.ParentDB, j.ParentTbl, o.Parent))
		}
	}
	return errs
}

// FanOutScope says, per join, where a change of its parent table goes on
// a sink of shards shards (nothing for a single database): its state row
// is written on every shard (a parent's children may live on any), and
// its fan-out — the UPDATE of the read rows that show it — stays on one
// shard only when it finds them by the shard key. Otherwise every shard's
// UPDATE runs: the change scatters. `readside plan` prints these lines.
func (p *Projection) FanOutScope(shards int) []string {
	if shards < 2 || (p.Aggregation != nil && len(p.Aggregation.Joined) > 0) {
		return nil // no fan-out: its groups move instead (JoinedGroupsPlan)
	}
	var out []string
	for _, j := range p.Joins {
		name := fmt.Sprintf("join[%d] %s.%s", j.N-1, j.ParentDB, j.ParentTbl)
		if j.As != "" {
			name += " (as " + j.As + ")"
		}
		if j.Via != nil {
			name += " via " + cmp.Or(j.Via.As, fmt.Sprintf("join[%d]", j.Via.N-1))
		}
		var by []string
		for _, o := range j.On {
			if j.Via != nil {
				by = append(by, fmt.Sprintf("%s (%s.%s.%s, carried)", o.Read, j.Via.ParentDB, j.Via.ParentTbl, o.Child))
			} else {
				by = append(by, o.Read)
			}
		}
		if j.Via == nil && len(j.On) == 1 && j.On[0].Read == p.ShardBy {
			out = append(out, fmt.Sprintf("%s: a change writes its state on all %d shards; its fan-out stays on the shard of %s, the shard key", name, shards, p.ShardBy))
			continue
		}
		out = append(out, fmt.Sprintf("%s: a change scatters to all %d shards: its fan-out finds the read rows by %s, not by the shard key %s", name, shards, strings.Join(by, ", "), p.ShardBy))
	}
	return out
}

// joinColumnKey is the config key that declares join j's column c: its
// own columns entry, or, for a carried key, the on of the join hanging
// off j that needs it.
func (p *Projection) joinColumnKey(j *Join, c Column) string {
	if c.Carried() {
		for _, d := range p.Joins {
			for _, on := range d.On {
				if d.Via == j && on.Read == c.Name {
					return fmt.Sprintf("projections.%s.join[%d].on.%s", p.Name, d.N-1, on.Parent)
				}
			}
		}
	}
	return fmt.Sprintf("projections.%s.join[%d].columns.%s", p.Name, j.N-1, c.Name)
}
