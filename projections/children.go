package projections

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/readside/readside/event"
)

// Children is one `children` entry: a JSON array read column of the
// parent's read row that nests the child rows pointing at it (one object
// per child, ordered, capped), and a count column of all of them. Each
// child row's last state is kept on the sink like a contribution, and the
// arrays of the parents a batch touches are rebuilt from it in the same
// transaction (docs/design/children.md, "Nested children").
type Children struct {
	Name        string // the JSON array read column
	CountColumn string // Name + "_count"
	SourceDB    string
	SourceTbl   string
	Topic       string
	// On pairs each child column with the parent's read column holding
	// the parent source column it matches.
	On      []ChildOn
	Columns []Column // the members of each element, by read name
	OrderBy []string // child columns; ties broken by the child's primary key
	Limit   int      // 0: no cap
	// Joins are the child row's own parents whose columns the elements
	// carry (children_join.go).
	Joins []*Join
	// key is the child table's primary key, learnt from the source schema
	// (SourceColumns): the state table keeps its columns to break ties in
	// the array's order as the source's ORDER BY … , <pk> does.
	key atomic.Pointer[[]string]
	// convert are the element members whose column has a character set
	// other than utf8mb4, learnt from the source schema (SourceColumns):
	// UTF8Member.
	convert atomic.Pointer[map[string]bool]
	// fromBroken and onBroken: from or on did not compile (Compile said
	// why), so SourceColumns leaves out the checks that read them.
	fromBroken, onBroken bool
}

// ChildOn is one pair of Children.On.
type ChildOn struct {
	Child  string // child source column
	Parent string // parent source column
	Read   string // the parent's read column that copies Parent
}

// ChildWrite is one child row change: its new state under its own source
// key, applied by the sink only when Version is newer than the stored one.
type ChildWrite struct {
	Child int // index into Projection.Children
	// Join, when not 0, is the Join.N of a parent of the children
	// (Children.Joins): the write is that parent row's new state under
	// its key (SourceKey, Link its values in Join.On order, Values in
	// Join.Columns order, nil when the parent is absent).
	Join      int
	SourceKey string // canonical text of the child's primary key
	Version   uint64
	// Truncate: every child state older than Version is withdrawn.
	Truncate bool
	// Link is the child's parent link, in On order; nil when the child
	// has no parent as of Version: deleted (the tombstone) or a NULL
	// link column.
	Link []Value
	// LinkKey is Link's canonical text ("" when Link is nil).
	LinkKey string
	// Values are the child's StateColumns, nil when Link is.
	Values []Value
	From   *Record
}

// SourceKey is the child table's primary key columns (nil until
// SourceColumns has read the source schema).
func (c *Children) SourceKey() []string {
	if k := c.key.Load(); k != nil {
		return *k
	}
	return nil
}

// SetSourceKey records the child table's primary key, as SourceColumns
// does; tools that compile without a source (tests, golden text) call it
// themselves. The first key recorded stays: the sink's state table is
// made with it.
func (c *Children) SetSourceKey(pk []string) {
	k := slices.Clone(pk)
	c.key.CompareAndSwap(nil, &k)
}

// UTF8Member reports whether element member name must reach JSON_OBJECT
// converted to utf8mb4: its column holds text in another character set.
// MariaDB's JSON_OBJECT refuses two columns of different single-byte sets
// ("Illegal mix of collations"), and JSON_ARRAYAGG garbles objects made of
// ucs2, utf16, utf16le or utf32 text into bytes no utf8mb4 column takes.
// The array is defined, on the sink and by verify on the source, over the
// members' text in utf8mb4: the same characters, escaped the same way.
func (c *Children) UTF8Member(name string) bool {
	if m := c.convert.Load(); m != nil {
		return (*m)[name]
	}
	return false
}

// setUTF8Members records, from the element members' column definitions
// (member name → type with charset, as SourceColumns reads them), the
// ones UTF8Member converts.
func (c *Children) setUTF8Members(defs map[string]string) {
	m := map[string]bool{}
	for name, def := range defs {
		if cs := definitionCharset(def); cs != "" && cs != "utf8mb4" {
			m[name] = true
		}
	}
	c.convert.Store(&m)
}

// definitionCharset is the character set a column definition names
// ("varchar(30) CHARACTER SET utf16 COLLATE utf16_general_ci"), "" for a
// column without one (numbers, dates, binary strings).
func definitionCharset(def string) string {
	f := strings.Fields(def)
	for i := 0; i+2 < len(f); i++ {
		if strings.EqualFold(f[i], "CHARACTER") && strings.EqualFold(f[i+1], "SET") {
			return strings.ToLower(f[i+2])
		}
	}
	return ""
}

// StateColumns are the child columns the state table keeps, each once:
// the link, the order_by columns, the primary key (the tie-breaker), then
// the element members' columns.
func (c *Children) StateColumns() []string {
	var out []string
	add := func(col string) {
		if !slices.Contains(out, col) {
			out = append(out, col)
		}
	}
	for _, on := range c.On {
		add(on.Child)
	}
	for _, o := range c.OrderBy {
		if c.OrderJoin(o) == nil {
			add(o)
		}
	}
	for _, col := range c.joinLinkColumns() {
		add(col)
	}
	for _, k := range c.SourceKey() {
		add(k)
	}
	for _, m := range c.Columns {
		add(m.Source)
	}
	return out
}

// ChildStateColumn names the state table's column of child column col.
func ChildStateColumn(col string) string {
	name := "c_" + col
	if len(name) > 64 {
		name = fmt.Sprintf("c_%x", xxhashString(col))
	}
	return name
}

// StateTable is the sink table holding each child row's last state (and
// the versions of deleted ones), on every shard. It is named after the
// read table, so a rebuild's shadow table gets its own.
func (c *Children) StateTable(p *Projection) string {
	return childTableName("_readside_child_", p.Table, c.Name)
}

// LinkTable is the sink table of one row per parent link a batch ever
// touched: a transaction locks the rows of the links it refreshes, so a
// parent write and a child write of one link in two transactions meet
// there (docs/design/children.md, "Nested children").
func (c *Children) LinkTable(p *Projection) string {
	return childTableName("_readside_childlink_", p.Table, c.Name)
}

func childTableName(prefix, table, name string) string {
	s := prefix + table + "_" + name
	if len(s) > 64 {
		s = fmt.Sprintf("%s%x", prefix, xxhashString(table+"\x00"+name))
	}
	return s
}

// TruncationName is the `_readside_truncations` row of the child table.
func (c *Children) TruncationName(p *Projection) string {
	return p.Name + "#child_" + c.Name
}

// collectChild adds the effect of an event of child table i to b: the
// child's new state under its primary key (the record key), a tombstone
// when deleted, or the table's truncation.
func (p *Projection) collectChild(b *Batch, i int, r *Record, e event.Event) error {
	c := p.Children[i]
	if e.Op == event.OpTruncate {
		b.ChildWrites = append(b.ChildWrites, ChildWrite{Child: i, Truncate: true, Version: e.Version, From: r})
		return nil
	}
	if len(r.Key) == 0 {
		return fmt.Errorf("event of %s.%s (children %s) without a record key: the tailer keys every record by the row's primary key", c.SourceDB, c.SourceTbl, c.Name)
	}
	if len(r.Key) > MaxKeyBytes {
		return fmt.Errorf("the primary key of a %s.%s row is %d bytes encoded, over the %d bytes the children state can hold: key the child table on shorter columns", c.SourceDB, c.SourceTbl, len(r.Key), MaxKeyBytes)
	}
	w := ChildWrite{Child: i, SourceKey: string(r.Key), Version: e.Version, From: r}
	img := e.After
	if e.Op == event.OpDelete {
		img = nil
	} else if img == nil {
		return fmt.Errorf("%s event of %s.%s without an after image", e.Op, c.SourceDB, c.SourceTbl)
	}
	if img != nil {
		link, key, err := c.link(img, e)
		if err != nil {
			return err
		}
		if link != nil {
			cols := c.StateColumns()
			w.Values = make([]Value, len(cols))
			for k, col := range cols {
				if w.Values[k], err = bindValue(img, col, e); err != nil {
					return fmt.Errorf("children %s: %w", c.Name, err)
				}
			}
			w.Link, w.LinkKey = link, key
		}
	}
	b.ChildWrites = append(b.ChildWrites, w)
	return nil
}

// link is img's parent link, nil when a link column is NULL.
func (c *Children) link(img *event.Image, e event.Event) ([]Value, string, error) {
	var b strings.Builder
	link := make([]Value, 0, len(c.On))
	for k, on := range c.On {
		raw, ok := img.Get(on.Child)
		if !ok {
			return nil, "", fmt.Errorf("children %s link: %w", c.Name, &missingColumn{on.Child})
		}
		if string(raw) == "null" {
			return nil, "", nil // no parent, as a NULL foreign key has none
		}
		if k > 0 {
			b.WriteByte(0)
		}
		b.Write(raw)
		v, err := bindValue(img, on.Child, e)
		if err != nil {
			return nil, "", err
		}
		link = append(link, v)
	}
	return link, b.String(), nil
}

// CoalesceChildWrites keeps the newest state per children entry and
// child key (and every truncation, in order).
func CoalesceChildWrites(ws []ChildWrite) []ChildWrite {
	type k struct {
		c, j int
		key  string
	}
	return coalesceNewest(ws, ws[:0:0], func(w ChildWrite) (k, bool) { return k{w.Child, w.Join, w.SourceKey}, w.Truncate },
		func(w ChildWrite) uint64 { return w.Version })
}

// columnKeys are the config keys of c that name child column col.
func (c *Children) columnKeys(p *Projection, col string) []string {
	key := fmt.Sprintf("projections.%s.children.%s", p.Name, c.Name)
	var out []string
	for _, on := range c.On {
		if on.Child == col {
			out = append(out, key+".on."+on.Child)
		}
	}
	for _, o := range c.OrderBy {
		if o == col {
			out = append(out, key+".order_by")
		}
	}
	for _, m := range c.Columns {
		if m.Source == col {
			out = append(out, key+".columns."+m.Name)
		}
	}
	for _, j := range c.Joins {
		for _, on := range j.On {
			if j.Via == nil && on.Child == col {
				out = append(out, fmt.Sprintf("%s.join[%d].on.%s", key, j.N-1, on.Parent))
			}
		}
	}
	return out
}

// ChildrenPlan says, per children entry, what `readside plan` prints
// about it: where the array and count come from, their order and cap,
// the state and link tables, and, on a sink of shards shards, that every
// shard keeps every child row's state.
func (p *Projection) ChildrenPlan(shards int) []string {
	var out []string
	for _, c := range p.Children {
		var on []string
		for _, o := range c.On {
			on = append(on, fmt.Sprintf("%s.%s = %s.%s", c.SourceTbl, o.Child, p.SourceTbl, o.Parent))
		}
		order := strings.Join(append(slices.Clone(c.OrderBy), c.SourceKey()...), ", ")
		if order == "" {
			order = "the child's primary key"
		}
		limit := "all of them"
		if c.Limit > 0 {
			limit = fmt.Sprintf("at most %d", c.Limit)
		}
		line := fmt.Sprintf("children %s: the %s.%s rows with %s as a JSON array in %s (ordered by %s; %s) and their count in %s; state in %s, link locks in %s; needs a MariaDB sink",
			c.Name, c.SourceDB, c.SourceTbl, strings.Join(on, " AND "), c.Name, order, limit, c.CountColumn, c.StateTable(p), c.LinkTable(p))
		for _, j := range c.Joins {
			var on []string
			below := c.SourceTbl
			if j.Via != nil {
				below = j.Via.ParentTbl
			}
			for _, o := range j.On {
				on = append(on, fmt.Sprintf("%s.%s = %s.%s", j.ParentTbl, o.Parent, below, o.Child))
			}
			var cols []string
			for _, col := range j.Columns {
				if !col.Carried() {
					cols = append(cols, col.Name)
				}
			}
			line += fmt.Sprintf("; join[%d] %s.%s (LEFT JOIN on %s) gives each element %s, its parent rows in %s, a change refreshing the arrays its children are in",
				j.N-1, j.ParentDB, j.ParentTbl, strings.Join(on, " AND "), strings.Join(cols, ", "), c.JoinStateTable(p, j))
		}
		if shards > 1 {
			line += fmt.Sprintf("; each of the %d shards keeps every child row's state and refreshes the parents it holds", shards)
		}
		out = append(out, line)
	}
	return out
}
