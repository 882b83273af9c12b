package main

// B2 of a children projection's read rows (-arrays): the rows a sink of
// such a read model must write whatever its design — each parent whose
// array a batch changes, written once per batch with its array and count
// — beside the child state B2 already writes (-joins): the projector
// writes both, so a limit of the copy alone would not be one.
//
// The arrays are built in Go before the clock starts, as B2 builds its
// batches: the records of the projection's parent, child and join topics
// are replayed in source order (their versions) into a model of the
// rows, and every record that changes a parent's array (a child added,
// moved or deleted, a join parent renamed under its children, the
// parent's own row) marks that parent in the batch the record belongs
// to, with its row as of that record. The batch's statement upserts each
// marked parent once, version-guarded like the sink's upserts. No reads,
// no aggregation on the server: the least work such a read table costs.

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// arrayModel replays a children projection's records into its read rows.
type arrayModel struct {
	p *projections.Projection
	c *projections.Children
	// parents are the parent rows by link value (the JSON text of the
	// parent's read column the children's on names).
	parents map[string]event.Image
	// children are the child rows by primary key; byLink the child keys
	// of each link.
	children map[string]*arrayChild
	byLink   map[string]map[string]bool
	// joined[i] are join i's parent rows by key; below[i] the child keys
	// pointing at each of them.
	joined []map[string]event.Image
	below  []map[string]map[string]bool
	// version is the highest version that changed each link's row.
	version map[string]uint64
}

type arrayChild struct {
	key  string
	link string
	row  event.Image
}

// newArrayModel is the model of children projection p (one children
// entry; its joins hang off the child row, each on one column).
func newArrayModel(p *projections.Projection) (*arrayModel, error) {
	if len(p.Children) != 1 || len(p.Children[0].On) != 1 {
		return nil, fmt.Errorf("projection %s: -arrays models one children entry on one column", p.Name)
	}
	c := p.Children[0]
	for _, j := range c.Joins {
		if j.Via != nil || len(j.On) != 1 {
			return nil, fmt.Errorf("projection %s: -arrays models children joins on one child column, without via", p.Name)
		}
	}
	if len(c.SourceKey()) == 0 {
		return nil, fmt.Errorf("projection %s: the child table's primary key is not known (SourceColumns first)", p.Name)
	}
	m := &arrayModel{p: p, c: c, parents: map[string]event.Image{}, children: map[string]*arrayChild{},
		byLink: map[string]map[string]bool{}, version: map[string]uint64{}}
	for range c.Joins {
		m.joined = append(m.joined, map[string]event.Image{})
		m.below = append(m.below, map[string]map[string]bool{})
	}
	return m, nil
}

// topics are the topics the model reads.
func (m *arrayModel) topics() []string {
	out := []string{m.p.Topic, m.c.Topic}
	for _, j := range m.c.Joins {
		out = append(out, j.Topic)
	}
	return out
}

// apply replays one event of topic and returns the links whose rows it
// changed.
func (m *arrayModel) apply(topic string, ev event.Event) []string {
	var touched []string
	switch topic {
	case m.p.Topic:
		for _, im := range []*event.Image{ev.Before, ev.After} {
			if im == nil {
				continue
			}
			link := m.parentLink(im)
			if !slices.Contains(touched, link) {
				touched = append(touched, link)
			}
		}
		if ev.Before != nil {
			delete(m.parents, m.parentLink(ev.Before))
		}
		if ev.After != nil {
			m.parents[m.parentLink(ev.After)] = *ev.After
		}
	case m.c.Topic:
		if ev.Before != nil {
			if old, ok := m.children[m.childKey(ev.Before)]; ok {
				touched = append(touched, old.link)
				m.dropChild(old)
			}
		}
		if ev.After != nil {
			ch := &arrayChild{key: m.childKey(ev.After), row: *ev.After}
			ch.link = value(ev.After, m.c.On[0].Child)
			if old, ok := m.children[ch.key]; ok {
				touched = append(touched, old.link)
				m.dropChild(old)
			}
			m.children[ch.key] = ch
			addTo(m.byLink, ch.link, ch.key)
			for i, j := range m.c.Joins {
				addTo(m.below[i], value(&ch.row, j.On[0].Child), ch.key)
			}
			if !slices.Contains(touched, ch.link) {
				touched = append(touched, ch.link)
			}
		}
	}
	for i, j := range m.c.Joins {
		if topic != j.Topic {
			continue
		}
		var keys []string
		if ev.Before != nil {
			k := value(ev.Before, j.On[0].Parent)
			delete(m.joined[i], k)
			keys = append(keys, k)
		}
		if ev.After != nil {
			k := value(ev.After, j.On[0].Parent)
			m.joined[i][k] = *ev.After
			keys = append(keys, k)
		}
		for _, k := range keys {
			// In key order: a map's order would make the touched
			// parents' order differ from run to run.
			for _, key := range slices.Sorted(maps.Keys(m.below[i][k])) {
				if l := m.children[key].link; !slices.Contains(touched, l) {
					touched = append(touched, l)
				}
			}
		}
	}
	for _, l := range touched {
		m.version[l] = max(m.version[l], ev.Version)
	}
	return touched
}

func addTo(index map[string]map[string]bool, at, key string) {
	if index[at] == nil {
		index[at] = map[string]bool{}
	}
	index[at][key] = true
}

func (m *arrayModel) dropChild(ch *arrayChild) {
	delete(m.children, ch.key)
	delete(m.byLink[ch.link], ch.key)
	for i, j := range m.c.Joins {
		delete(m.below[i][value(&ch.row, j.On[0].Child)], ch.key)
	}
}

// value is column col of im as JSON text ("null" when absent).
func value(im *event.Image, col string) string {
	if v, ok := im.Get(col); ok && v != nil {
		return string(v)
	}
	return "null"
}

func (m *arrayModel) parentLink(im *event.Image) string {
	read := m.c.On[0].Read
	for _, col := range m.p.Columns {
		if col.Name == read {
			return value(im, col.Source)
		}
	}
	return "null"
}

func (m *arrayModel) childKey(im *event.Image) string {
	var b strings.Builder
	for _, k := range m.c.SourceKey() {
		b.WriteString(value(im, k))
		b.WriteByte(0)
	}
	return b.String()
}

// member is element member mem of child ch: its own column or its join
// parent's.
func (m *arrayModel) member(ch *arrayChild, mem projections.Member) string {
	if mem.Join == nil {
		return value(&ch.row, mem.Source)
	}
	i := slices.Index(m.c.Joins, mem.Join)
	par, ok := m.joined[i][value(&ch.row, mem.Join.On[0].Child)]
	if !ok {
		return "null"
	}
	return value(&par, mem.Source)
}

// orderValue is order_by entry o of child ch.
func (m *arrayModel) orderValue(ch *arrayChild, o string) string {
	if j := m.c.OrderJoin(o); j != nil {
		for _, col := range j.Columns {
			if col.Name == o {
				return m.member(ch, projections.Member{Name: o, Source: col.Source, Join: j})
			}
		}
	}
	return value(&ch.row, o)
}

// columns are the read table columns a row literal holds, in order.
func (m *arrayModel) columns() []string {
	var out []string
	for _, col := range m.p.Columns {
		out = append(out, col.Name)
	}
	return append(out, m.c.Name, m.c.CountColumn, "_rs_version")
}

// row is link's read row as a SQL row literal, "" when it has none (no
// parent row and no children).
func (m *arrayModel) row(link string) string {
	par, hasParent := m.parents[link]
	keys := m.byLink[link]
	if !hasParent && len(keys) == 0 {
		return ""
	}
	b := []byte("(")
	for i, col := range m.p.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		if !hasParent {
			if col.Name == m.c.On[0].Read {
				b = appendJSONLiteral(b, link)
			} else {
				b = append(b, "NULL"...)
			}
			continue
		}
		b = appendJSONLiteral(b, value(&par, col.Source))
	}
	elems := m.elements(keys)
	var arr []byte
	if len(elems) > 0 {
		arr = append(arr, '[')
		for i, e := range elems {
			if i > 0 {
				arr = append(arr, ", "...)
			}
			arr = append(arr, e...)
		}
		arr = append(arr, ']')
		b = append(b, ',')
		b = append(b, sqlquote.Literal(string(arr))...)
	} else {
		b = append(b, ",NULL"...)
	}
	b = fmt.Appendf(b, ",%d,%d)", len(keys), m.version[link])
	return string(b)
}

// elements are the JSON objects of the child rows keys names, in the
// array's order (order_by, then the child's primary key), at most limit.
func (m *arrayModel) elements(keys map[string]bool) []string {
	chs := make([]*arrayChild, 0, len(keys))
	for k := range keys {
		chs = append(chs, m.children[k])
	}
	sort.Slice(chs, func(a, b int) bool {
		for _, o := range m.c.OrderBy {
			if c := compareJSON(m.orderValue(chs[a], o), m.orderValue(chs[b], o)); c != 0 {
				return c < 0
			}
		}
		for _, k := range m.c.SourceKey() {
			if c := compareJSON(value(&chs[a].row, k), value(&chs[b].row, k)); c != 0 {
				return c < 0
			}
		}
		return false
	})
	if m.c.Limit > 0 && len(chs) > m.c.Limit {
		chs = chs[:m.c.Limit]
	}
	out := make([]string, len(chs))
	for i, ch := range chs {
		var b strings.Builder
		b.WriteByte('{')
		for j, mem := range m.c.Members() {
			if j > 0 {
				b.WriteString(", ")
			}
			name, _ := json.Marshal(mem.Name)
			b.Write(name)
			b.WriteString(": ")
			b.WriteString(m.member(ch, mem))
		}
		b.WriteByte('}')
		out[i] = b.String()
	}
	return out
}

// compareJSON orders two JSON scalars as the sink's ORDER BY would for
// the bench's columns: NULL first, numbers by value, text without regard
// to case.
func compareJSON(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "null":
		return -1
	case b == "null":
		return 1
	}
	if a[0] == '"' && b[0] == '"' {
		var x, y string
		json.Unmarshal([]byte(a), &x)
		json.Unmarshal([]byte(b), &y)
		return strings.Compare(strings.ToLower(x), strings.ToLower(y))
	}
	var x, y float64
	json.Unmarshal([]byte(a), &x)
	json.Unmarshal([]byte(b), &y)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// appendJSONLiteral appends JSON scalar v as a SQL literal.
func appendJSONLiteral(b []byte, v string) []byte {
	switch {
	case v == "null":
		return append(b, "NULL"...)
	case v == "true":
		return append(b, '1')
	case v == "false":
		return append(b, '0')
	case strings.HasPrefix(v, `"`):
		var s string
		if err := json.Unmarshal([]byte(v), &s); err == nil {
			return append(b, sqlquote.Literal(s)...)
		}
	}
	return append(b, v...)
}

// upsertRows are the statements writing rows (row literals) into table,
// each guarded by the row's version as the sink's upserts are.
func upsertRows(table string, cols []string, rows []string) []string {
	quoted := make([]string, len(cols))
	var sets []string
	for i, c := range cols {
		quoted[i] = "`" + c + "`"
		if c != "_rs_version" {
			sets = append(sets, fmt.Sprintf("`%[1]s` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`%[1]s`), `%[1]s`)", c))
		}
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))")
	head := "INSERT INTO `" + table + "` (" + strings.Join(quoted, ", ") + ") VALUES "
	tail := " ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", ")
	var out []string
	for lo := 0; lo < len(rows); lo += 500 {
		out = append(out, head+strings.Join(rows[lo:min(lo+500, len(rows))], ",")+tail)
	}
	return out
}

// arrayStep is one record of the model's topics, decoded.
type arrayStep struct {
	rec *kgo.Record
	ev  event.Event
}

// sourceOrder decodes recs (every record of the model's topics) and
// orders them as the source committed them (their versions): the same
// for every point, so decoded once.
func sourceOrder(recs []*kgo.Record) ([]arrayStep, error) {
	steps := make([]arrayStep, 0, len(recs))
	for _, r := range recs {
		ev, err := event.DecodeEvent(r.Value)
		if err != nil {
			return nil, fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		steps = append(steps, arrayStep{r, ev})
	}
	slices.SortStableFunc(steps, func(a, b arrayStep) int { return cmp.Compare(a.ev.Version, b.ev.Version) })
	return steps, nil
}

// arrayBatches replays steps (sourceOrder) into a fresh model of children
// projection p and returns, per connection and batch (at[r] says which a
// record is in), the statements writing the rows the batch's records
// changed, each once, as of the batch's last record that changed it; and
// the statements writing every row as the replay leaves it.
func arrayBatches(p *projections.Projection, table string, steps []arrayStep, at map[*kgo.Record][2]int, conns [][]*projections.Batch) (after [][][]string, final []string, err error) {
	m, err := newArrayModel(p)
	if err != nil {
		return nil, nil, err
	}
	// pending[conn][batch][link] is the link's row as of the batch's last
	// record that changed it.
	pending := make([][]map[string]string, len(conns))
	for i := range conns {
		pending[i] = make([]map[string]string, len(conns[i]))
	}
	for _, s := range steps {
		where, ok := at[s.rec]
		if !ok {
			return nil, nil, fmt.Errorf("record %s/%d@%d is in no batch", s.rec.Topic, s.rec.Partition, s.rec.Offset)
		}
		for _, link := range m.apply(s.rec.Topic, s.ev) {
			p := &pending[where[0]][where[1]]
			if *p == nil {
				*p = map[string]string{}
			}
			(*p)[link] = m.row(link)
		}
	}
	cols := m.columns()
	after = make([][][]string, len(conns))
	for i := range pending {
		after[i] = make([][]string, len(pending[i]))
		for j, rows := range pending[i] {
			after[i][j] = upsertRows(table, cols, sortedRows(rows))
		}
	}
	all := map[string]string{}
	for link := range m.version {
		all[link] = m.row(link)
	}
	return after, upsertRows(table, cols, sortedRows(all)), nil
}

// sortedRows are the non-empty row literals of rows in link order (the
// order every connection locks rows in).
func sortedRows(rows map[string]string) []string {
	links := make([]string, 0, len(rows))
	for l, r := range rows {
		if r != "" {
			links = append(links, l)
		}
	}
	slices.SortFunc(links, compareJSON)
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = rows[l]
	}
	return out
}

// arraysTable creates table for the read rows of children projection p
// (its read table's DDL, without the state tables) and returns how to
// drop it.
func arraysTable(ctx context.Context, sink *sinks.MySQL, p *projections.Projection, types projections.Types, table string) (drop func(), err error) {
	cp := *p
	cp.Table = table
	var create string
	for _, s := range sinks.DDL(&cp, types) {
		if strings.Contains(s, "CREATE TABLE IF NOT EXISTS `"+table+"`") {
			create = s
		}
	}
	if create == "" {
		return nil, fmt.Errorf("no CREATE TABLE of %s in the DDL of %s", table, p.Name)
	}
	dropSQL := "DROP TABLE IF EXISTS `" + table + "`"
	if err := sink.Exec(ctx, []string{dropSQL, create}); err != nil {
		return nil, err
	}
	return func() { sink.Exec(context.Background(), []string{dropSQL}) }, nil
}

// arraysChecksum is benchio.ChildrenChecksum of the read rows of m's
// projection in table.
func arraysChecksum(ctx context.Context, db *sql.DB, m *arrayModel, table string) (rows, sum int64, err error) {
	cols := m.columns()
	return benchio.ChildrenChecksum(ctx, db, table, cols[:len(cols)-1], m.c.Name)
}
