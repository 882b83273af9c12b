package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// runAggregate is B2 of an aggregate projection (-aggregate): the raw
// multi-row upsert of its group rows, already coalesced. The records of
// the projection's source topic are replayed in Go, in order, a point's
// batch rows of them at a time; after each batch, every group the batch
// touched is written once with its values as of then (one multi-row
// INSERT … ON DUPLICATE KEY UPDATE of the final values, and one DELETE of
// the groups left empty), in one transaction per batch per connection,
// each connection owning a share of the groups (by hash). No contribution
// state, no deltas, no version: the least any sink must write to keep the
// group rows current. The replay and the statements' text are made before
// the clock starts, as B2's decoding is. The rate counts group rows
// written per second (the JSON's events is the records).
//
// A count(distinct) aggregate adds what any exact incremental design of
// it must keep: per (group, value) the number of the group's rows holding
// the value, without which a withdrawn value cannot tell whether another
// row still holds it. Each batch writes the reference counts it changed,
// coalesced (one upsert of the new counts, one DELETE of those back to
// 0, per aggregate and connection, in the group rows' transaction) into
// <table>_dst_<column>. The rate still counts group rows; the reference
// count rows are in the description.
//
// The values are computed in Go from the source rows' copies (a plain
// projection of the source table built here: its primary key, the group
// columns and the aggregated ones), so -aggregate takes group_by of
// source columns (or of one join's columns: aggregate_joined.go, which
// writes the state that form keeps too) and aggregates of one source
// column each (count(*),
// count, count(distinct), sum, min, max, avg); count(distinct) compares
// values by their bytes, min and max numbers as numbers and everything
// else by its bytes (binary collation). The read table's final
// rows are summed into a checksum (benchio.TableChecksum) for benchall to
// compare with the projector's.
func runAggregate(ctx context.Context, cfg config.Config, name string, recs []*kgo.Record, recPath string, points []benchio.Point) error {
	d, ok := cfg.Projections[name]
	if !ok {
		return fmt.Errorf("no projection %q in the config (name one with -projection)", name)
	}
	aggs, err := parseAggregates(name, d)
	if err != nil {
		return err
	}
	jg, err := parseJoinedGroup(name, d)
	if err != nil {
		return err
	}
	src, err := openSource(cfg)
	if err != nil {
		return err
	}
	defer src.Close()
	db, tbl, _ := strings.Cut(d.From, ".")
	pk, err := sourcePK(ctx, src, db, tbl)
	if err != nil {
		return err
	}
	// The plain copy whose writes carry each source row's values.
	cols := slices.Clone(pk)
	for _, c := range d.GroupBy {
		if jg == nil || !slices.Contains(jg.joined, c) {
			cols = appendNew(cols, c)
		}
	}
	if jg != nil {
		cols = appendNew(cols, jg.link)
	}
	for _, a := range aggs {
		if a.arg != "" {
			cols = appendNew(cols, a.arg)
		}
	}
	plain := config.Projection{From: d.From, Sink: d.Sink, Table: name + "_b2src", Key: pk, Columns: map[string]string{}}
	for _, c := range cols {
		plain.Columns[c] = c
	}
	pcfg := cfg
	pcfg.Projections = map[string]config.Projection{name + "_b2src": plain}
	if jg != nil {
		pcfg.Projections[name+"_b2par"] = jg.parentCopy(d, name)
	}
	ps, err := projections.Compile(pcfg)
	if err != nil {
		return fmt.Errorf("the source copy for -aggregate: %w", err)
	}
	var p, pp *projections.Projection
	for _, c := range ps {
		if c.Name == name+"_b2src" {
			p = c
		} else {
			pp = c
		}
	}
	types, sink, err := open(ctx, cfg, p)
	if err != nil {
		return err
	}
	defer sink.Close()
	at := map[string]int{}
	for i, c := range p.Columns {
		at[c.Name] = i
	}
	var ptypes projections.Types
	if pp != nil {
		if ptypes, err = pp.SourceColumns(ctx, src); err != nil {
			return err
		}
	}
	var steps []replayStep // per record, source and parent
	for _, rec := range recs {
		if rec.Value == nil || (rec.Topic != p.Topic && (pp == nil || rec.Topic != pp.Topic)) {
			continue
		}
		ev, err := event.DecodeEvent(rec.Value)
		if err != nil {
			return err
		}
		cp := p
		if rec.Topic != p.Topic {
			cp = pp
		}
		ws, err := cp.Writes(ev)
		if err != nil {
			return err
		}
		steps = append(steps, replayStep{version: ev.Version, parent: cp == pp, writes: ws})
	}
	if len(steps) == 0 {
		return fmt.Errorf("%s holds no records of %s", recPath, p.Topic)
	}
	// The record file holds each topic's records in order, one topic
	// after the other: the versions give the source's order across them.
	slices.SortStableFunc(steps, func(a, b replayStep) int { return cmp.Compare(a.version, b.version) })
	writes := make([][]projections.Write, len(steps))
	for i, st := range steps {
		writes[i] = st.writes
	}

	g := &grouping{group: d.GroupBy, at: at, numeric: map[string]bool{}}
	var defs []string
	for _, c := range d.GroupBy {
		t := types.Read[c]
		if jg != nil && slices.Contains(jg.joined, c) {
			t = ptypes.Read[c]
		}
		defs = append(defs, fmt.Sprintf("`%s` %s NOT NULL", c, baseType(t)))
	}
	for i, a := range aggs {
		def := a.def(baseType(types.Read[a.arg]))
		defs = append(defs, fmt.Sprintf("`%s` %s", a.column, def))
		if m := scaleOf.FindStringSubmatch(def); m != nil {
			fmt.Sscan(m[1], &aggs[i].scale)
		}
		g.numeric[a.arg] = numericType.MatchString(baseType(types.Read[a.arg]))
	}
	table := d.Table
	if table == "" {
		table = name
	}
	table += "_b2"
	quoted := make([]string, len(d.GroupBy))
	for i, c := range d.GroupBy {
		quoted[i] = "`" + c + "`"
	}
	g.aggs = aggs
	ddl := fmt.Sprintf("CREATE TABLE `%s` (%s, PRIMARY KEY (%s))", table, strings.Join(defs, ", "), strings.Join(quoted, ", "))
	if err := sink.Exec(ctx, []string{fmt.Sprintf("DROP TABLE IF EXISTS `%s`", table), ddl}); err != nil {
		return err
	}
	defer sink.Exec(context.Background(), []string{fmt.Sprintf("DROP TABLE IF EXISTS `%s`", table)})
	for _, a := range aggs {
		if a.fn != "count_distinct" {
			continue
		}
		if jg != nil {
			return fmt.Errorf("projections.%s.aggregates.%s: -aggregate measures count(distinct) with groups of source columns only", name, a.column)
		}
		rt := refsTable(table, a)
		rdefs := append(slices.Clone(defs[:len(d.GroupBy)]), fmt.Sprintf("`value` %s NOT NULL", baseType(types.Read[a.arg])), "`refs` BIGINT NOT NULL")
		rddl := fmt.Sprintf("CREATE TABLE `%s` (%s, PRIMARY KEY (%s, `value`))", rt, strings.Join(rdefs, ", "), strings.Join(quoted, ", "))
		if err := sink.Exec(ctx, []string{fmt.Sprintf("DROP TABLE IF EXISTS `%s`", rt), rddl}); err != nil {
			return err
		}
		defer sink.Exec(context.Background(), []string{fmt.Sprintf("DROP TABLE IF EXISTS `%s`", rt)})
	}
	if jg != nil {
		r := &joinedReplay{g: g, jg: jg, pk: pk}
		for _, c := range p.Columns {
			r.srcCols = append(r.srcCols, c.Name)
		}
		r.parAt = map[string]int{}
		for i, c := range pp.Columns {
			r.parAt[c.Name] = i
		}
		if err := r.createState(ctx, sink, table, types, ptypes); err != nil {
			return err
		}
		defer sink.Exec(context.Background(), []string{fmt.Sprintf("DROP TABLE IF EXISTS `%sc`", table), fmt.Sprintf("DROP TABLE IF EXISTS `%sp`", table)})
		return r.run(ctx, sink, table, steps, points)
	}

	var best benchio.Result
	for _, pt := range points {
		if err := sink.Exec(ctx, []string{fmt.Sprintf("TRUNCATE TABLE `%s`", table)}); err != nil {
			return err
		}
		for _, a := range aggs {
			if a.fn == "count_distinct" {
				if err := sink.Exec(ctx, []string{fmt.Sprintf("TRUNCATE TABLE `%s`", refsTable(table, a))}); err != nil {
					return err
				}
			}
		}
		conns, rows, refRows := g.statements(table, writes, pt)
		settlePoint(ctx, sink, &best, pt)
		load, cpu0 := benchio.Load1(), benchio.SelfCPU()
		t := time.Now()
		if err := execAll(ctx, sink.DB(), conns); err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		pt.PerS = float64(rows) / secs
		best.Sweep = append(best.Sweep, pt)
		if pt.PerS > best.PerS {
			best.PerS, best.Seconds, best.Load1, best.Events = pt.PerS, secs, load, len(writes)
			best.CPUPer1000 = (benchio.SelfCPU() - cpu0) / float64(rows) * 1000
			best.Description = fmt.Sprintf("%d-record batches, %d connection(s): %d group rows written for %d records (%.0f records/s)", pt.BatchRows, pt.Connections, rows, len(writes), float64(len(writes))/secs)
			if refRows > 0 {
				best.Description += fmt.Sprintf(", and %d reference count rows of the distinct aggregates", refRows)
			}
		}
	}
	cols = slices.Clone(d.GroupBy)
	for _, a := range aggs {
		cols = append(cols, a.column)
	}
	if best.ReadRows, best.Checksum, err = benchio.TableChecksum(ctx, sink.DB(), table, cols); err != nil {
		return err
	}
	benchio.Emit(best)
	return nil
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// aggregate is one `aggregates` entry -aggregate can compute.
type aggregate struct {
	column, fn, arg string // arg "" for count(*)
	scale           int    // digits after the point of a sum or avg
}

var (
	aggText     = regexp.MustCompile(`^\s*(count|sum|min|max|avg)\s*\(\s*(distinct\s+)?(\*|[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	numericType = regexp.MustCompile(`^(tinyint|smallint|mediumint|int|bigint|decimal|numeric)\b`)
	scaleOf     = regexp.MustCompile(`^decimal\(\d+,(\d+)\)`)
)

func parseAggregates(name string, d config.Projection) ([]aggregate, error) {
	if len(d.GroupBy) == 0 || len(d.Aggregates) == 0 {
		return nil, fmt.Errorf("projection %s has no group_by and aggregates: -aggregate measures an aggregate projection", name)
	}
	if d.Where != "" {
		return nil, fmt.Errorf("projection %s has a where: -aggregate replays every source row (measure a projection without one)", name)
	}
	for _, c := range d.GroupBy {
		if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(c) {
			return nil, fmt.Errorf("projections.%s.group_by: %q is not a source column; -aggregate groups by source columns only", name, c)
		}
	}
	var out []aggregate
	for col, text := range d.Aggregates {
		m := aggText.FindStringSubmatch(strings.ToLower(text))
		if m == nil || (m[3] == "*" && (m[1] != "count" || m[2] != "")) || (m[2] != "" && m[1] != "count") {
			return nil, fmt.Errorf("projections.%s.aggregates.%s %q: -aggregate computes count(*), count, count(distinct), sum, min, max and avg of one source column", name, col, text)
		}
		a := aggregate{column: col, fn: m[1]}
		if m[2] != "" {
			a.fn = "count_distinct"
		}
		if m[3] != "*" {
			a.arg = m[3]
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b aggregate) int { return strings.Compare(a.column, b.column) })
	return out, nil
}

// def is the read column's type: what CREATE TABLE … AS SELECT gives the
// aggregate, up to a sum's precision (65 digits here; only the width of
// the column differs, not its values).
func (a aggregate) def(argType string) string {
	scale := 0
	if m := scaleOf.FindStringSubmatch(argType); m != nil {
		fmt.Sscan(m[1], &scale)
	}
	switch a.fn {
	case "count", "count_distinct":
		return "bigint(21) NOT NULL"
	case "sum":
		return fmt.Sprintf("decimal(65,%d) NULL", scale)
	case "avg":
		return fmt.Sprintf("decimal(65,%d) NULL", min(scale+4, 30))
	}
	return argType + " NULL"
}

// baseType is a column definition without its nullability.
func baseType(def string) string {
	def = strings.TrimSpace(def)
	for _, suffix := range []string{" NOT NULL", " NULL"} {
		def = strings.TrimSuffix(def, suffix)
	}
	return def
}

// refsTable is B2's reference count table of count(distinct) aggregate a.
func refsTable(table string, a aggregate) string { return table + "_dst_" + a.column }

// grouping replays source row changes into group rows.
type grouping struct {
	group   []string
	aggs    []aggregate
	at      map[string]int  // source column → index in a write's values
	numeric map[string]bool // aggregated column → compared as a number
}

// member is a source row's last contribution.
type member struct {
	group string
	vals  []projections.Value
}

// groupRow is a group's current state.
type groupRow struct {
	key     []projections.Value
	members map[string]*member
}

// refKey is one reference count: a distinct aggregate (its index in
// grouping.aggs), a group's text and a value's bytes.
type refKey struct {
	agg          int
	group, value string
}

// refChange is a reference count a batch touched: its group and value,
// and its count before the batch.
type refChange struct {
	key    []projections.Value
	value  projections.Value
	before int64
}

// statements replays the writes pt.BatchRows records at a time and
// renders each batch's group rows (and reference counts) as one
// transaction's statements per connection; it returns them, the group
// rows written and the reference count rows written.
func (g *grouping) statements(table string, writes [][]projections.Write, pt benchio.Point) ([][][]string, int, int) {
	rows := map[string]*member{}
	groups := map[string]*groupRow{}
	conns := make([][][]string, pt.Connections)
	written, refsWritten := 0, 0
	// refs are, per distinct aggregate, per group text, the rows holding
	// each value.
	refs := make([]map[string]map[string]int64, len(g.aggs))
	for i, a := range g.aggs {
		if a.fn == "count_distinct" {
			refs[i] = map[string]map[string]int64{}
		}
	}
	for lo := 0; lo < len(writes); lo += pt.BatchRows {
		touched := map[string]bool{}
		changed := map[refKey]*refChange{}
		count := func(m *member, key []projections.Value, sign int64) {
			for i, a := range g.aggs {
				if refs[i] == nil {
					continue
				}
				v := m.vals[g.at[a.arg]]
				if v.Kind() == projections.NullValue {
					continue
				}
				byValue := refs[i][m.group]
				if byValue == nil {
					byValue = map[string]int64{}
					refs[i][m.group] = byValue
				}
				rk := refKey{agg: i, group: m.group, value: string(v.Bytes())}
				if changed[rk] == nil {
					changed[rk] = &refChange{key: key, value: v, before: byValue[rk.value]}
				}
				if byValue[rk.value] += sign; byValue[rk.value] == 0 {
					delete(byValue, rk.value)
				}
			}
		}
		for _, ws := range writes[lo:min(lo+pt.BatchRows, len(writes))] {
			for _, w := range ws {
				if old := rows[w.Key]; old != nil {
					count(old, groups[old.group].key, -1)
					delete(groups[old.group].members, w.Key)
					touched[old.group] = true
					delete(rows, w.Key)
				}
				if w.Kind != projections.Upsert {
					continue
				}
				key := make([]projections.Value, len(g.group))
				var text []byte
				for i, c := range g.group {
					key[i] = w.Values[g.at[c]]
					text = append(append(text, key[i].String()...), 0)
				}
				m := &member{group: string(text), vals: w.Values}
				rows[w.Key] = m
				gr := groups[m.group]
				if gr == nil {
					gr = &groupRow{key: key, members: map[string]*member{}}
					groups[m.group] = gr
				}
				gr.members[w.Key] = m
				touched[m.group] = true
				count(m, gr.key, 1)
			}
		}
		conn := func(gk string) int {
			h := fnv.New32a()
			h.Write([]byte(gk))
			return int(h.Sum32() % uint32(pt.Connections))
		}
		ins := make([][]byte, pt.Connections)
		del := make([][]byte, pt.Connections)
		for _, gk := range slices.Sorted(maps.Keys(touched)) {
			gr := groups[gk]
			c := conn(gk)
			written++
			if len(gr.members) == 0 {
				del[c] = g.appendKey(sep(del[c], "DELETE FROM `"+table+"` WHERE ("+strings.Join(g.group, ", ")+") IN ("), gr.key)
				delete(groups, gk)
				continue
			}
			ins[c] = g.appendRow(sep(ins[c], "INSERT INTO `"+table+"` VALUES "), gr)
		}
		// The reference counts the batch moved, in key order, per
		// aggregate: the new counts upserted, those back to 0 deleted.
		keys := slices.SortedFunc(maps.Keys(changed), func(x, y refKey) int {
			return cmp.Or(cmp.Compare(x.agg, y.agg), strings.Compare(x.group, y.group), strings.Compare(x.value, y.value))
		})
		refStmts := make([][]string, pt.Connections)
		for from := 0; from < len(keys); {
			i := keys[from].agg
			to := from
			for to < len(keys) && keys[to].agg == i {
				to++
			}
			rt := refsTable(table, g.aggs[i])
			rins := make([][]byte, pt.Connections)
			rdel := make([][]byte, pt.Connections)
			for _, rk := range keys[from:to] {
				ch := changed[rk]
				after := refs[i][rk.group][rk.value]
				if after == ch.before {
					continue
				}
				c := conn(rk.group)
				refsWritten++
				if after == 0 {
					b := g.appendKey(sep(rdel[c], "DELETE FROM `"+rt+"` WHERE ("+strings.Join(g.group, ", ")+", `value`) IN ("), append(slices.Clone(ch.key), ch.value))
					rdel[c] = b
					continue
				}
				b := append(sep(rins[c], "INSERT INTO `"+rt+"` VALUES "), '(')
				for _, k := range ch.key {
					b = append(appendLiteral(b, k), ',')
				}
				rins[c] = fmt.Appendf(append(appendLiteral(b, ch.value), ','), "%d)", after)
			}
			for c := range refStmts {
				if rins[c] != nil {
					refStmts[c] = append(refStmts[c], string(rins[c])+" ON DUPLICATE KEY UPDATE `refs` = VALUES(`refs`)")
				}
				if rdel[c] != nil {
					refStmts[c] = append(refStmts[c], string(append(rdel[c], ')')))
				}
			}
			from = to
		}
		for c := range conns {
			var txn []string
			if ins[c] != nil {
				b := append(ins[c], " ON DUPLICATE KEY UPDATE "...)
				for i, a := range g.aggs {
					if i > 0 {
						b = append(b, ", "...)
					}
					b = fmt.Appendf(b, "`%s` = VALUES(`%s`)", a.column, a.column)
				}
				txn = append(txn, string(b))
			}
			if del[c] != nil {
				txn = append(txn, string(append(del[c], ')')))
			}
			txn = append(txn, refStmts[c]...)
			if txn != nil {
				conns[c] = append(conns[c], txn)
			}
		}
	}
	return conns, written, refsWritten
}

// sep starts a statement with head, or separates its next tuple.
func sep(b []byte, head string) []byte {
	if b == nil {
		return []byte(head)
	}
	return append(b, ',')
}

func (g *grouping) appendKey(b []byte, key []projections.Value) []byte {
	b = append(b, '(')
	for i := range key {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLiteral(b, key[i])
	}
	return append(b, ')')
}

// appendRow appends the group's row: its key, then each aggregate over
// its members.
func (g *grouping) appendRow(b []byte, gr *groupRow) []byte {
	b = append(b, '(')
	for i := range gr.key {
		b = appendLiteral(b, gr.key[i])
		b = append(b, ',')
	}
	for i, a := range g.aggs {
		if i > 0 {
			b = append(b, ',')
		}
		b = g.appendAggregate(b, a, gr)
	}
	return append(b, ')')
}

func (g *grouping) appendAggregate(b []byte, a aggregate, gr *groupRow) []byte {
	var n int64
	sum := new(big.Rat)
	var ext *projections.Value
	var seen map[string]bool // count(distinct): the values by their bytes
	if a.fn == "count_distinct" {
		seen = map[string]bool{}
	}
	for _, m := range gr.members {
		if a.arg == "" {
			n++
			continue
		}
		v := &m.vals[g.at[a.arg]]
		if v.Kind() == projections.NullValue {
			continue
		}
		n++
		switch a.fn {
		case "count_distinct":
			seen[string(v.Bytes())] = true
		case "sum", "avg":
			r, _ := new(big.Rat).SetString(string(v.Bytes()))
			if r != nil {
				sum.Add(sum, r)
			}
		case "min", "max":
			if ext == nil || (g.less(a.arg, v, ext) == (a.fn == "min")) && !g.same(a.arg, v, ext) {
				ext = v
			}
		}
	}
	switch a.fn {
	case "count":
		return fmt.Appendf(b, "%d", n)
	case "count_distinct":
		return fmt.Appendf(b, "%d", len(seen))
	case "sum":
		if n == 0 {
			return append(b, "NULL"...)
		}
		return append(b, sum.FloatString(a.scale)...)
	case "avg":
		if n == 0 {
			return append(b, "NULL"...)
		}
		return append(b, sum.Quo(sum, new(big.Rat).SetInt64(n)).FloatString(a.scale)...)
	}
	if ext == nil {
		return append(b, "NULL"...)
	}
	return appendLiteral(b, *ext)
}

func (g *grouping) less(col string, a, b *projections.Value) bool {
	if g.numeric[col] {
		x, _ := new(big.Rat).SetString(string(a.Bytes()))
		y, _ := new(big.Rat).SetString(string(b.Bytes()))
		if x != nil && y != nil {
			return x.Cmp(y) < 0
		}
	}
	return bytes.Compare(a.Bytes(), b.Bytes()) < 0
}

func (g *grouping) same(col string, a, b *projections.Value) bool {
	return !g.less(col, a, b) && !g.less(col, b, a)
}

// appendLiteral writes a value as a SQL literal (a quoted string for
// text, which MariaDB converts for numeric columns exactly; hex for
// bytes).
func appendLiteral(b []byte, v projections.Value) []byte {
	switch v.Kind() {
	case projections.NullValue:
		return append(b, "NULL"...)
	case projections.BytesValue:
		return fmt.Appendf(b, "X'%x'", v.Bytes())
	case projections.UintValue:
		return fmt.Appendf(b, "%d", v.Uint())
	}
	b = append(b, '\'')
	for _, c := range v.Bytes() {
		switch c {
		case '\'', '\\':
			b = append(b, '\\', c)
		case 0:
			b = append(b, '\\', '0')
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}

// execAll runs each connection's transactions in order, the connections
// concurrently, and returns the first error.
func execAll(ctx context.Context, db *sql.DB, conns [][][]string) error {
	errs := make(chan error, len(conns))
	for _, txns := range conns {
		go func() {
			errs <- execTxns(ctx, db, txns)
		}()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func execTxns(ctx context.Context, db *sql.DB, txns [][]string) error {
	for _, stmts := range txns {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				_ = tx.Rollback()
				return fmt.Errorf("%.200s…: %w", s, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// sourcePK is a source table's primary key columns, in key order.
func sourcePK(ctx context.Context, db *sql.DB, schema, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT column_name FROM information_schema.key_column_usage WHERE table_schema = ? AND table_name = ? AND constraint_name = 'PRIMARY' ORDER BY ordinal_position", schema, table)
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	var pk []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		pk = append(pk, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(pk) == 0 {
		return nil, fmt.Errorf("%s.%s has no primary key on the source", schema, table)
	}
	return pk, nil
}
