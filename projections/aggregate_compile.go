package projections

// Compiling an aggregate projection: group_by becomes the read key (each
// entry a read column: a copy or an expression), aggregates become the
// other read columns. Typing against the source (typeAggregates) gives
// each aggregate the column CREATE TABLE … AS SELECT gives it on MariaDB,
// and its contribution (what one source row adds) the column its
// argument's values need.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/readside/readside/config"
	"github.com/readside/readside/expr"
)

// compileAggregate compiles group_by and aggregates (nil errors when the
// projection has neither) into p.Key, p.Columns and p.Aggregation.
func compileAggregate(p *Projection, d config.Projection, key string) []error {
	if len(d.GroupBy) == 0 && len(d.Aggregates) == 0 {
		return nil
	}
	errs := aggregateShapeErrors(d, key)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	agg := &Aggregation{typed: new(atomic.Pointer[aggTyped])}
	p.Key, p.Columns = nil, nil
	byName, order, exprs, gerrs := compileGroupBy(d, key)
	errs = append(errs, gerrs...)
	agg.joinedFrom, agg.joinedExpr = joinedGroupColumns(d, order, exprs), exprs
	if d.ShardBy != "" {
		if _, ok := byName[d.ShardBy]; !ok {
			bad("%s.shard_by %q must be one of its group columns %v: shard by a group column", key, d.ShardBy, order)
		} else if _, joined := agg.joinedFrom[d.ShardBy]; joined {
			bad("%s.shard_by %q is a joined parent's column: a group's shard must not move when the parent changes: shard by a group column of %s itself", key, d.ShardBy, d.From)
		} else {
			p.Key = append(p.Key, d.ShardBy)
		}
	}
	for _, n := range order {
		if n != d.ShardBy {
			p.Key = append(p.Key, n)
		}
	}
	for _, n := range p.Key {
		p.Columns = append(p.Columns, byName[n])
	}
	agg.GroupBy = slices.Clone(p.Key)
	p.Aggregation = agg
	switch {
	case len(agg.joinedFrom) > 0:
		errs = append(errs, joinedGroupJoinErrors(d, key, agg.joinedFrom, agg.joinedExpr)...)
	case groupsReadJoins(d):
		// Every group_by entry over a join's columns was refused above,
		// with its fix; the joins are not descriptive ones to check.
	default:
		errs = append(errs, aggregateJoinErrors(p, d, key)...)
	}
	var aerrs []error
	agg.Aggregates, aerrs = compileAggregates(d, key, byName)
	errs = append(errs, aerrs...)
	p.Aggregation = agg
	return errs
}

// unshardedAggregateError refuses an aggregate without shard_by on a
// sharded sink, naming the group columns it may be sharded by: those of
// the source row (a joined parent's would move a group's shard when the
// parent changes, and an aggregate cannot be replicated), or, when every
// group comes from a joined parent, that it needs a sink with one shard.
func unshardedAggregateError(p *Projection, key, from, sink string, shards int) error {
	var own, joined []string
	if p.Aggregation != nil {
		for _, g := range p.Aggregation.GroupBy {
			if _, j := p.Aggregation.joinedFrom[g]; j {
				joined = append(joined, g)
			} else {
				own = append(own, g)
			}
		}
	}
	if len(own) == 0 && len(joined) > 0 {
		return fmt.Errorf("%s: sink %s has %d shards, but every group column of this aggregate (%s) is a joined parent's, and a group's shard must not move when its parent changes (nor can an aggregate be replicated): put the projection on a sink with one shard, or add a group column of %s to group_by and shard_by it",
			key, sink, shards, strings.Join(joined, ", "), from)
	}
	return fmt.Errorf("%s: sink %s has %d shards: set shard_by to one of its group columns of the source row %v (an aggregate cannot be replicated)", key, sink, shards, own)
}

// aggregateShapeErrors are the keys an aggregate projection must have
// (group_by and aggregates) or cannot have.
func aggregateShapeErrors(d config.Projection, key string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(d.Key) > 0 {
		bad("%s.key: an aggregate projection's key is its group_by columns: remove key", key)
	}
	if len(d.GroupBy) == 0 {
		bad("%s.aggregates without group_by: list the group columns in group_by, e.g. group_by: [customer_id]", key)
	}
	if len(d.Aggregates) == 0 {
		bad("%s.group_by without aggregates: add aggregates, e.g. aggregates: {orders: \"count(*)\"}", key)
	}
	if len(d.Children) > 0 {
		bad("%s.children: an aggregate projection cannot nest children: nest them in a projection with key instead", key)
	}
	if d.Replicated {
		bad("%s: an aggregate projection cannot be replicated: remove replicated (shard it by a group column with shard_by)", key)
	}
	return errs
}

// compileGroupBy compiles the group columns, by read column name, in
// group_by's order. A group_by entry is a read column of columns, a source
// column, or an expression (whose read column is named after it); columns
// may hold nothing else.
// An entry over a joined parent's columns is a joined group column
// (aggregate_joined.go), its expression in joined.
func compileGroupBy(d config.Projection, key string) (byName map[string]Column, order []string, joined map[string]*expr.Expr, errs []error) {
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	byName = map[string]Column{}
	used := map[string]bool{}
	for i, g := range d.GroupBy {
		name, text := g, g
		if k := joinDeclaring(d, g); k >= 0 {
			// A joined parent's column (aggregate_joined.go): its value
			// comes from the join's state on the sink, not the source row.
			if _, dup := byName[g]; dup {
				bad("%s.group_by[%d] %q: read column %q is already a group column: list each group once", key, i, g, g)
				continue
			}
			used[g] = true
			byName[g] = Column{Name: g}
			order = append(order, g)
			continue
		}
		if v, ok := d.Columns[g]; ok {
			text = v
		} else if e, err := expr.Parse(g); err == nil {
			if col, plain := e.Column(); plain {
				name = col
			} else {
				name = groupColumnName(g)
			}
		} else {
			// Not an expression ("Cust Id", "a.b"): only a source
			// column's name, copied under it.
			name = g
		}
		if why := readColumnProblem(name); why != "" {
			bad("%s.group_by[%d] %q: read column %q: %s: name it in columns (e.g. columns: {day: %q}) and list that name in group_by", key, i, g, name, why, g)
			continue
		}
		if _, dup := byName[name]; dup {
			bad("%s.group_by[%d] %q: read column %q is already a group column: list each group once", key, i, g, name)
			continue
		}
		if e, err := expr.Parse(text); err == nil && slices.ContainsFunc(e.Columns(), func(c string) bool { return joinDeclaring(d, c) >= 0 }) {
			if why := joinedExprProblem(d, e); why != "" {
				bad("%s.group_by[%d] %q: %s", key, i, g, why)
				continue
			}
			if joined == nil {
				joined = map[string]*expr.Expr{}
			}
			joined[name] = e
			used[g] = true
			byName[name] = Column{Name: name}
			order = append(order, name)
			continue
		}
		c, err := compileColumn(name, text, d.ColumnTypes[name])
		if err != nil {
			bad("%s.group_by[%d] %q: %v", key, i, g, err)
		}
		used[g] = true
		byName[name] = c
		order = append(order, name)
	}
	names := make([]string, 0, len(d.Columns))
	for c := range d.Columns {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		if !used[c] {
			bad("%s.columns.%s: an aggregate projection's columns may hold only its group columns: add %s to group_by, or remove it", key, c, c)
		}
	}
	return byName, order, joined, errs
}

// groupsReadJoins reports whether a group_by entry names or reads a
// join's column: the projection's groups are meant to come from joined
// parents.
func groupsReadJoins(d config.Projection) bool {
	for _, g := range d.GroupBy {
		if joinDeclaring(d, g) >= 0 {
			return true
		}
		text := g
		if v, ok := d.Columns[g]; ok {
			text = v
		}
		if e, err := expr.Parse(text); err == nil && slices.ContainsFunc(e.Columns(), func(c string) bool { return joinDeclaring(d, c) >= 0 }) {
			return true
		}
	}
	return false
}

// aggregateJoinErrors checks an aggregate projection's joins: each finds
// a group's parent by group columns that copy a source column.
func aggregateJoinErrors(p *Projection, d config.Projection, key string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, j := range d.Join {
		// A group's parent is found by the group's own columns; a parent's
		// parent (via) would need a carried key per group.
		if j.Via != "" {
			bad("%s.join[%d].via: a join through another join is not supported on an aggregate projection whose joins copy a group's descriptive columns: to group by a parent's column, list that join column in group_by (groups from joined parents, any depth); else join the group's parent directly, its on naming group columns", key, i)
			continue
		}
		pcs := make([]string, 0, len(j.On))
		for pc := range j.On {
			pcs = append(pcs, pc)
		}
		sort.Strings(pcs)
		for _, pc := range pcs {
			child := j.On[pc]
			if !slices.ContainsFunc(p.Columns, func(c Column) bool { return c.Source == child && c.Expr == nil }) {
				bad("%s.join[%d].on.%s: %q is not a group_by column copying a source column: an aggregate projection's join finds a group's parent by its group columns (add %s to group_by, or join on a group column)%s", key, i, pc, child, child, copiesInstead(key, d, child))
			}
		}
	}
	for c := range d.Aggregates {
		for i, j := range d.Join {
			if _, clash := j.Columns[c]; clash {
				bad("%s.join[%d].columns.%s: %s is also an aggregate: rename one of them", key, i, c, c)
			}
		}
	}
	return errs
}

// compileAggregates parses the aggregates, in column name order.
func compileAggregates(d config.Projection, key string, groups map[string]Column) ([]Aggregate, []error) {
	var aggs []Aggregate
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	cols := make([]string, 0, len(d.Aggregates))
	for c := range d.Aggregates {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, c := range cols {
		text := d.Aggregates[c]
		if why := readColumnProblem(c); why != "" {
			bad("%s.aggregates.%s: %s: rename the column", key, c, why)
			continue
		}
		if _, clash := groups[c]; clash {
			bad("%s.aggregates.%s: %s is also a group column: rename one of them", key, c, c)
			continue
		}
		a, err := parseAggregate(c, text)
		if err != nil {
			bad("%s.aggregates.%s %q: %v", key, c, text, err)
			continue
		}
		aggs = append(aggs, a)
	}
	return aggs, errs
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// groupColumnName names a group_by expression's read column: lower-cased,
// each run of characters outside [a-z0-9_] one "_", trimmed
// (DATE(created_at) → date_created_at).
func groupColumnName(text string) string {
	return strings.Trim(nonIdent.ReplaceAllString(strings.ToLower(text), "_"), "_")
}

// aggArity is each function's number of arguments.
var aggArity = map[AggFunc]int{AggCount: 1, AggSum: 1, AggMin: 1, AggMax: 1, AggCountIf: 1, AggSumIf: 2, AggAvg: 1}

// aggForms lists the aggregate forms parseAggregate accepts, for the
// messages refusing the others.
const aggForms = "count(*), count(expr), count(distinct expr), sum(expr), sum(distinct expr), min(expr), max(expr), avg(expr), count_if(cond) and sum_if(cond, expr)"

// distinctArg matches an argument list that starts with DISTINCT.
var distinctArg = regexp.MustCompile(`(?i)^distinct\b`)

// parseAggregate parses one `aggregates` value, e.g. "sum_if(status =
// 'paid', total_cents)".
func parseAggregate(col, text string) (Aggregate, error) {
	a := Aggregate{Column: col, Text: text}
	t := strings.TrimSpace(text)
	open := strings.IndexByte(t, '(')
	if open < 0 || !strings.HasSuffix(t, ")") {
		return a, errors.New("want a function call; the supported aggregates are " + aggForms)
	}
	a.Func = AggFunc(strings.ToLower(strings.TrimSpace(t[:open])))
	n, ok := aggArity[a.Func]
	if !ok {
		return a, fmt.Errorf("unknown aggregate function %q: the supported aggregates are %s", strings.TrimSpace(t[:open]), aggForms)
	}
	inner := strings.TrimSpace(t[open+1 : len(t)-1])
	if a.Func == AggCount && inner == "*" {
		return a, nil
	}
	if loc := distinctArg.FindStringIndex(inner); loc != nil {
		return parseDistinct(a, strings.TrimSpace(inner[loc[1]:]))
	}
	args := splitArgs(inner)
	if len(args) != n || slices.Contains(args, "") {
		return a, fmt.Errorf("%s takes %d argument(s), got %d", a.Func, n, len(args))
	}
	var es []*expr.Expr
	for _, s := range args {
		e, err := expr.Parse(s)
		if err != nil {
			return a, fmt.Errorf("argument %q: %w", s, err)
		}
		es = append(es, e)
	}
	switch a.Func {
	case AggCountIf:
		a.Cond = es[0]
	case AggSumIf:
		a.Cond, a.Arg = es[0], es[1]
	default:
		a.Arg = es[0]
	}
	return a, nil
}

// parseDistinct parses the argument of a.Func(DISTINCT arg): count's or
// sum's one expression; the other functions are refused with what to
// write instead.
func parseDistinct(a Aggregate, arg string) (Aggregate, error) {
	switch a.Func {
	case AggMin, AggMax:
		return a, fmt.Errorf("%s(DISTINCT …) is %s(…) (distinct values have the same extremes): drop DISTINCT", a.Func, a.Func)
	case AggCount, AggSum:
	default:
		return a, fmt.Errorf("%s(DISTINCT …) is not supported: of the DISTINCT forms only count(distinct expr) and sum(distinct expr) are; the supported aggregates are %s", a.Func, aggForms)
	}
	args := splitArgs(arg)
	switch {
	case len(args) == 0 || args[0] == "":
		return a, fmt.Errorf("%[1]s(DISTINCT) needs an expression, e.g. %[1]s(distinct customer_id)", a.Func)
	case len(args) > 1:
		return a, fmt.Errorf("%[1]s(DISTINCT …) of %[2]d expressions is not supported: %[1]s(distinct expr) takes one expression (to count distinct pairs, count one expression combining them, e.g. count(distinct CONCAT(a, '/', b)))", a.Func, len(args))
	case arg == "*":
		return a, fmt.Errorf("%s(DISTINCT *) is not an aggregate: count(*) counts the rows, count(distinct expr) the distinct values of expr", a.Func)
	}
	e, err := expr.Parse(args[0])
	if err != nil {
		return a, fmt.Errorf("argument %q: %w", args[0], err)
	}
	a.Arg = e
	if a.Func == AggSum {
		a.Func = AggSumDistinct
	} else {
		a.Func = AggCountDistinct
	}
	return a, nil
}

// splitArgs splits a call's argument text at its top-level commas (not
// inside parentheses or quotes).
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// aggTyped is the aggregates checked against the source table: what the
// projector evaluates. Read-only once made.
type aggTyped struct {
	aggs []aggExprs // per Aggregation.Aggregates
}

// aggExprs are one aggregate's checked expressions.
type aggExprs struct {
	arg, cond     *expr.Expr
	argT          expr.Type // the argument's type (Bind)
	argArgs       []expr.Type
	condArgs      []expr.Type
	contrib, read string // column definitions
}

// joinedArgument explains a missing aggregate argument that a join
// declares: aggregates read the source row, and a joined column is a
// group column at most.
func (p *Projection) joinedArgument(col string) string {
	for _, j := range p.Joins {
		for _, c := range j.Columns {
			if c.Name == col {
				return fmt.Sprintf("; %s is a column of the joined %s.%s: an aggregate's argument reads the %s.%s row only, and a joined column can be a group column (group_by), not an aggregated value", col, j.ParentDB, j.ParentTbl, p.SourceDB, p.SourceTbl)
			}
		}
	}
	return ""
}

// typeAggregates checks the aggregates against the source table and puts
// their read and contribution column definitions in out.
func (p *Projection) typeAggregates(src *sourceTable, out *Types) []error {
	ag := p.Aggregation
	var errs []error
	t := &aggTyped{}
	out.Contribution = map[string]string{}
	for _, a := range ag.Aggregates {
		key := fmt.Sprintf("projections.%s.aggregates.%s %q", p.Name, a.Column, a.Text)
		var x aggExprs
		check := func(e *expr.Expr) (*expr.Expr, expr.Type, []expr.Type, bool) {
			fresh, err := expr.Parse(e.String())
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				return nil, expr.Type{}, nil, false
			}
			typ, err := fresh.Check(func(name string) (expr.Column, bool) {
				def, ok := src.types[name]
				if !ok {
					return expr.Column{}, false
				}
				return expr.Column{Name: name, Def: def, Nullable: src.nullable[name] && !p.Where.ExcludesNull(name)}, true
			})
			if err != nil {
				missing := firstMissing(fresh.Columns(), src)
				_, cols := src.has(missing)
				if strings.Contains(err.Error(), "its columns:") {
					cols = ""
				}
				errs = append(errs, fmt.Errorf("%s: %w%s%s", key, err, cols, p.joinedArgument(missing)))
				return nil, expr.Type{}, nil, false
			}
			args, err := src.argTypes(fresh.Columns())
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				return nil, expr.Type{}, nil, false
			}
			return fresh, typ, args, true
		}
		ok := true
		if a.Cond != nil {
			x.cond, _, x.condArgs, ok = check(a.Cond)
		}
		if a.Arg != nil {
			var ok2 bool
			x.arg, x.argT, x.argArgs, ok2 = check(a.Arg)
			ok = ok && ok2
		}
		if !ok {
			t.aggs = append(t.aggs, x)
			continue
		}
		switch a.Func {
		case AggCount, AggCountIf:
			x.read, x.contrib = "bigint(21) NOT NULL", "tinyint unsigned NOT NULL DEFAULT 0"
		case AggCountDistinct:
			if why := distinctValueProblem(x.argT); why != "" {
				errs = append(errs, fmt.Errorf("%s: count(distinct) over %s: %s", key, x.argT.Column, why))
				t.aggs = append(t.aggs, x)
				continue
			}
			// The contribution is the value (the one withdrawn when the
			// row changes); the read column is COUNT(DISTINCT)'s.
			x.read, x.contrib = "bigint(21) NOT NULL", x.argT.Column+" NULL"
		case AggSumDistinct:
			prec, scale, why := sumPrecision(x.argT, x.arg, src)
			if why != "" {
				errs = append(errs, fmt.Errorf("%s: sum over %s: %s", key, x.argT.Column, why))
				t.aggs = append(t.aggs, x)
				continue
			}
			x.read, x.contrib = decimalDef(prec+22, scale)+" NULL", x.argT.Column+" NULL"
		case AggMin, AggMax:
			if base, _, _ := strings.Cut(strings.ToLower(x.argT.Column), "("); base == "enum" || base == "set" {
				// The contributions' index, which the extreme is read
				// from, orders them by member position instead.
				errs = append(errs, fmt.Errorf("%s: %s over %s: MySQL's MIN and MAX compare ENUM and SET values as strings, not by member position as an index orders them, so readside's would differ: take it over the text, e.g. %s(CONCAT(%s))",
					key, a.Func, x.argT.Column, a.Func, a.Arg))
				t.aggs = append(t.aggs, x)
				continue
			}
			x.read, x.contrib = x.argT.Column+" NULL", x.argT.Column+" NULL"
		case AggSum, AggSumIf, AggAvg:
			prec, scale, why := sumPrecision(x.argT, x.arg, src)
			if why != "" {
				errs = append(errs, fmt.Errorf("%s: %s over %s: %s", key, a.Func, x.argT.Column, why))
				t.aggs = append(t.aggs, x)
				continue
			}
			x.contrib = x.argT.Column + " NULL"
			x.read = decimalDef(prec+22, scale) + " NULL"
			if a.Func == AggAvg {
				x.read = decimalDef(prec+4, scale+4) + " NULL"
				out.Read[AvgSumColumn(a.Column)] = decimalDef(prec+22, scale) + " NULL"
			}
		}
		out.Read[a.Column] = x.read
		out.Contribution[a.Column] = x.contrib
		t.aggs = append(t.aggs, x)
	}
	if len(errs) == 0 {
		ag.typed.Store(t)
	}
	return errs
}

// distinctValueProblem is why values of type t cannot be counted
// distinct ("" when they can): the reference counts are keyed by (group,
// value) in an InnoDB primary key, which holds neither TEXT, BLOB nor
// JSON values nor keys over 3072 bytes.
func distinctValueProblem(t expr.Type) string {
	def := strings.ToLower(t.Column)
	base, _, _ := strings.Cut(def, "(")
	base, _, _ = strings.Cut(base, " ")
	switch base {
	case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json", "geometry":
		return "values of this type cannot key the reference counts (an index holds at most 3072 bytes): count a bounded expression instead, e.g. count(distinct CAST(x AS CHAR(255)))"
	}
	if n := charLength(def); n*4 > 1024 {
		return fmt.Sprintf("a value of up to %d characters is too long to key the reference counts (at most 256 characters, an index holding at most 3072 bytes with the group): count a shorter expression, e.g. count(distinct CAST(x AS CHAR(255))), or shorten the column", n)
	}
	return ""
}

// charLength is the length n of a "char(n)", "varchar(n)", "binary(n)"
// or "varbinary(n)" definition (0 for other types).
func charLength(def string) int {
	base, rest, ok := strings.Cut(def, "(")
	if !ok || !slices.Contains([]string{"char", "varchar", "binary", "varbinary"}, base) {
		return 0
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// decimalDef is DECIMAL(prec, scale) within MariaDB's bounds.
func decimalDef(prec, scale int) string {
	scale = min(scale, 38)
	prec = max(min(prec, 65), scale, 1)
	return fmt.Sprintf("decimal(%d,%d)", prec, scale)
}

// sumPrecision is the precision and scale MariaDB's SUM and AVG start
// from (Item::decimal_precision of the argument), or why the argument
// cannot be summed exactly.
func sumPrecision(t expr.Type, e *expr.Expr, src *sourceTable) (prec, scale int, why string) {
	def := strings.ToLower(t.Column)
	if col, plain := e.Column(); plain {
		def = strings.ToLower(src.types[col])
	}
	name, _, _ := strings.Cut(def, "(")
	name, _, _ = strings.Cut(name, " ")
	switch {
	case t.Kind == expr.KindDouble:
		return 0, 0, "FLOAT and DOUBLE sums depend on the order rows are added in, so readside's would drift from the source's own SUM: CAST it to DECIMAL, e.g. CAST(x AS DECIMAL(20,6))"
	case name == "year" || name == "bit":
		return 0, 0, "not a number to sum: sum a numeric (integer or DECIMAL) column or expression"
	case t.Kind == expr.KindDecimal:
		return t.Prec(), int(t.Frac), ""
	case t.Kind == expr.KindInt || t.Kind == expr.KindUint:
		switch name {
		case "tinyint":
			return 3, 0, ""
		case "smallint":
			return 5, 0, ""
		case "mediumint":
			return 8, 0, ""
		case "int", "integer":
			return 10, 0, ""
		case "bigint":
			if t.Kind == expr.KindUint {
				return 20, 0, ""
			}
			return 19, 0, ""
		}
		return t.Prec(), 0, ""
	}
	return 0, 0, "not a number to sum: sum a numeric (integer or DECIMAL) column or expression"
}

// AvgSumColumn is avg column col's hidden running sum in the read table.
func AvgSumColumn(col string) string { return "_rs_sum_" + col }

// NonNullColumn is aggregate col's hidden count of non-NULL values in the
// read table (SUM, AVG, MIN and MAX of only NULLs are NULL).
func NonNullColumn(col string) string { return "_rs_n_" + col }

// RowsColumn is an aggregate read table's hidden count of contributing
// source rows: the group disappears when it reaches 0.
const RowsColumn = "_rs_rows"

// checkShardCollation refuses an aggregate sharded by a string group
// column whose collation calls values with different bytes equal ('A'
// and 'a' under a _ci collation; 'a' and 'a ' under every PAD SPACE one,
// _bin included): the source's GROUP BY makes them one group, but a
// group's shard is chosen by its bytes, so the group would be split over
// rows on two shards. read are the read columns' definitions.
func (p *Projection) checkShardCollation(read map[string]string) error {
	if p.Aggregation == nil || p.ShardBy == "" {
		return nil
	}
	def := strings.ToLower(read[p.ShardBy])
	base, _, _ := strings.Cut(def, "(")
	base, _, _ = strings.Cut(base, " ")
	switch base {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
	default:
		return nil
	}
	_, coll, ok := strings.Cut(def, " collate ")
	coll, _, _ = strings.Cut(coll, " ")
	if !ok || strings.HasSuffix(coll, "_nopad_bin") {
		return nil
	}
	return fmt.Errorf("projections.%s.shard_by %q: the group column is %s, a collation under which values with different bytes are equal ('A' and 'a' under _ci collations, 'a' and 'a ' under PAD SPACE ones, _bin included): the source's GROUP BY makes them one group, but a group's shard is picked by its bytes, so that group would be split over two shards; "+
		"shard by another group column (a number such as a tenant or customer id, listed in group_by), give the column a byte-exact collation (e.g. utf8mb4_nopad_bin), or put the projection on a sink with one shard without shard_by",
		p.Name, p.ShardBy, coll)
}
