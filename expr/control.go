package expr

import (
	"fmt"
	"strings"
)

// Control flow: CASE, IF, IFNULL, NULLIF, COALESCE. Only the branch
// chosen is evaluated (as in MySQL, so an error in another branch is not
// raised), and its value takes the result type all branches aggregate
// to, as MySQL's type aggregation gives it (an integer and a decimal give
// a decimal, a number and a string a string, …).

// builtin is a call the parser builds into a node of its own rather than
// a registered Func: it needs lazy evaluation or is an operator spelled
// as a function.
type builtin struct {
	min, max int
	make     func(args []node, at int) node
}

var builtins = map[string]builtin{
	"IF":       {3, 3, func(a []node, at int) node { return &ctrl{fn: "IF", args: a, at: at} }},
	"IFNULL":   {2, 2, func(a []node, at int) node { return &ctrl{fn: "IFNULL", args: a, at: at} }},
	"NULLIF":   {2, 2, func(a []node, at int) node { return &ctrl{fn: "NULLIF", args: a, at: at} }},
	"COALESCE": {1, -1, func(a []node, at int) node { return &ctrl{fn: "COALESCE", args: a, at: at} }},
	"MOD":      {2, 2, func(a []node, at int) node { return &arith{op: opMod, l: a[0], r: a[1], at: at} }},
}

type ctrl struct {
	fn    string
	args  []node
	at    int
	typ   Type
	types []Type  // the arguments' types
	eq    compare // NULLIF's comparison
}

func (c *ctrl) sql(col func(string) string) string {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = a.sql(col)
	}
	return c.fn + "(" + strings.Join(args, ", ") + ")"
}

func (c *ctrl) check(s Schema) (Type, error) {
	types := make([]Type, len(c.args))
	for i, a := range c.args {
		t, err := a.check(s)
		if err != nil {
			return Type{}, err
		}
		types[i] = t
	}
	c.types = types
	var err error
	switch c.fn {
	case "IF":
		c.typ, err = aggregate(c.args[1:], types[1:], c.at)
		c.typ.Nullable = c.typ.Nullable || types[0].Nullable // as MariaDB types it
	case "NULLIF":
		c.eq = compare{op: cmpEQ}
		if err = c.eq.prepare(c.args[0], c.args[1], types[0], types[1], c.at); err != nil {
			return Type{}, err
		}
		c.typ = types[0]
		c.typ.Nullable = true
		if c.typ.Kind == KindNull {
			c.typ = bytesType(0, true)
		}
	case "IFNULL":
		c.typ, err = aggregate(c.args, types, c.at)
		c.typ.Nullable = types[0].Nullable && types[1].Nullable
	default:
		c.typ, err = aggregate(c.args, types, c.at)
		c.typ.Nullable = true
		for _, t := range types {
			if !t.Nullable {
				c.typ.Nullable = false
			}
		}
	}
	return c.typ, err
}

func (c *ctrl) eval(row []Datum) (Datum, error) {
	switch c.fn {
	case "IF":
		cond, err := c.args[0].eval(row)
		if err != nil {
			return Null, err
		}
		if t, _ := truth(cond); t {
			return c.branch(1, row)
		}
		return c.branch(2, row)
	case "NULLIF":
		a, err := c.args[0].eval(row)
		if err != nil {
			return Null, err
		}
		b, err := c.args[1].eval(row)
		if err != nil {
			return Null, err
		}
		if t, _ := truth(c.eq.apply(a, b)); t {
			return Null, nil
		}
		return a, nil
	}
	for i, a := range c.args { // IFNULL, COALESCE
		v, err := a.eval(row)
		if err != nil {
			return Null, err
		}
		if !v.IsNull() {
			return result(v, c.types[i], c.typ), nil
		}
	}
	return Null, nil
}

func (c *ctrl) branch(i int, row []Datum) (Datum, error) {
	v, err := c.args[i].eval(row)
	if err != nil || v.IsNull() {
		return Null, err
	}
	return result(v, c.types[i], c.typ), nil
}

// result is a branch's value v (of type from) as the result type to:
// as a string it is the branch's own text (a quotient at its type's
// scale, as val_str gives it), as a number it keeps every digit.
func result(v Datum, from, to Type) Datum {
	if to.Kind == KindString || to.Kind == KindBytes {
		v = final(v, from)
	}
	return coerce(v, to)
}

func (c *caseNode) check(s Schema) (Type, error) {
	var ot Type
	var err error
	if c.operand != nil {
		if ot, err = c.operand.check(s); err != nil {
			return Type{}, err
		}
		c.cmps = make([]compare, len(c.whens))
	}
	results := append([]node{}, c.thens...)
	condNullable := c.operand != nil && ot.Nullable
	for i, w := range c.whens {
		wt, err := w.check(s)
		if err != nil {
			return Type{}, err
		}
		condNullable = condNullable || wt.Nullable
		if c.operand != nil {
			cm := &c.cmps[i]
			cm.op = cmpEQ
			if err = cm.prepare(c.operand, w, ot, wt, c.at); err != nil {
				return Type{}, err
			}
			cm.allDigits = true
		}
	}
	if c.els != nil {
		results = append(results, c.els)
	} else {
		results = append(results, nullLit(c.at))
	}
	types := make([]Type, len(results))
	for i, r := range results {
		if types[i], err = r.check(s); err != nil {
			return Type{}, err
		}
	}
	c.types = types
	c.typ, err = aggregate(results, types, c.at)
	c.typ.Nullable = c.typ.Nullable || condNullable // MariaDB's CASE is nullable when a condition is, too
	return c.typ, err
}

func (c *caseNode) eval(row []Datum) (Datum, error) {
	var op Datum
	if c.operand != nil {
		v, err := c.operand.eval(row)
		if err != nil {
			return Null, err
		}
		op = v
	}
	for i, w := range c.whens {
		v, err := w.eval(row)
		if err != nil {
			return Null, err
		}
		if c.operand != nil {
			v = c.cmps[i].apply(op, v)
		}
		if t, _ := truth(v); t {
			return c.result(c.thens[i], c.types[i], row)
		}
	}
	if c.els == nil {
		return Null, nil
	}
	return c.result(c.els, c.types[len(c.types)-1], row)
}

func (c *caseNode) result(n node, t Type, row []Datum) (Datum, error) {
	v, err := n.eval(row)
	if err != nil || v.IsNull() {
		return Null, err
	}
	return result(v, t, c.typ), nil
}

// aggregate is the type of a result that may come from any of nodes, as
// MySQL aggregates the types of CASE's and IF's branches.
func aggregate(nodes []node, types []Type, at int) (Type, error) {
	nullable := false
	var kinds branchKinds
	for _, t := range types {
		nullable = nullable || t.Nullable
		if t.Kind == KindNull {
			nullable = true
			continue
		}
		kinds[t.Kind] = true
	}
	var live []int
	for i, t := range types {
		if t.Kind != KindNull {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return bytesType(0, true), nil
	}
	numericOnly, temporalOnly := true, true
	for _, i := range live {
		k := types[i].Kind
		numericOnly = numericOnly && isNumeric(k)
		temporalOnly = temporalOnly && isTemporal(k)
	}
	switch {
	case numericOnly:
		return aggregateNumeric(types, live, kinds, nullable), nil
	case temporalOnly:
		return aggregateTemporal(types, live, kinds, nullable), nil
	default:
		return aggregateMixed(nodes, types, live, kinds, nullable, at)
	}
}

// branchKinds says which kinds the branches that are not NULL have.
type branchKinds [KindJSON + 1]bool

// aggregateNumeric is the type of branches that are all numbers: DOUBLE
// if one is, else DECIMAL wide enough for every one, else an integer.
func aggregateNumeric(types []Type, live []int, kinds branchKinds, nullable bool) Type {
	switch {
	case kinds[KindDouble]:
		return doubleType(nullable)
	case kinds[KindDecimal]:
		ip, sc := 0, 0
		for _, i := range live {
			_, d, s := numeric(types[i])
			ip, sc = max(ip, d-s), max(sc, s)
		}
		return decimalType(ip+sc, sc, nullable)
	}
	k, digits := KindUint, 0
	for _, i := range live {
		if types[i].Kind == KindInt {
			k = KindInt
		}
		digits = max(digits, types[i].prec)
	}
	if kinds[KindInt] && kinds[KindUint] {
		// a signed and an unsigned integer: MySQL widens to DECIMAL
		return decimalType(digits, 0, nullable)
	}
	return aggregateInts(types, live, k, digits, nullable)
}

// aggregateTemporal is the type of branches that are all dates and
// times, with the most fractional digits of any.
func aggregateTemporal(types []Type, live []int, kinds branchKinds, nullable bool) Type {
	frac := 0
	for _, i := range live {
		frac = max(frac, int(types[i].Frac))
	}
	switch {
	case kinds[KindDatetime] || kinds[KindDate] && kinds[KindTime]:
		return temporalType(KindDatetime, frac, nullable)
	case kinds[KindDate]:
		return temporalType(KindDate, 0, nullable)
	default:
		return temporalType(KindTime, frac, nullable)
	}
}

// aggregateMixed is the type of branches of mixed kinds: a string as long
// as the longest branch's text, in the collation MySQL's coercibility
// rules pick (binary if any branch is bytes; JSON if all are).
func aggregateMixed(nodes []node, types []Type, live []int, kinds branchKinds, nullable bool, at int) (Type, error) {
	n := 0
	for _, i := range live {
		n = max(n, textLength(types[i]))
	}
	if kinds[KindBytes] {
		return bytesType(n, nullable), nil
	}
	if kinds[KindJSON] && len(live) == countKind(types, KindJSON) {
		t := types[live[0]]
		t.Nullable = nullable
		return t, nil
	}
	coll, lit := "", true
	for _, i := range live {
		t := types[i]
		if t.Kind != KindString && t.Kind != KindJSON {
			continue
		}
		c := t.Coll
		if t.Kind == KindJSON {
			c = "utf8mb4_bin"
		}
		var err error
		if coll, err = pickCollation(coll, c, lit, coercible(nodes[i])); err != nil {
			return Type{}, errAt(at, "%v", err)
		}
		lit = lit && coercible(nodes[i])
	}
	for _, i := range live {
		if types[i].Kind == KindString {
			if err := literalConverts(nodes[i], types[i].Coll, coll); err != nil {
				return Type{}, errAt(at, "%v", err)
			}
		}
	}
	if coll == "" {
		coll = connCollation
	}
	return stringType(n, coll, nullable), nil
}

// intNames are MySQL's integer types, narrowest first.
var intNames = []string{"tinyint", "smallint", "mediumint", "int", "bigint"}

// aggregateInts is the integer type of branches that are all integers:
// the widest of their types, shown as wide as the most digits (and a
// sign) need.
func aggregateInts(types []Type, live []int, k Kind, digits int, nullable bool) Type {
	rank, width := 0, 0
	for _, i := range live {
		col := strings.ToLower(types[i].Column)
		for r, n := range intNames {
			if strings.HasPrefix(col, n) {
				rank = max(rank, r)
			}
		}
		w := types[i].prec
		if types[i].Kind == KindInt {
			w++ // the sign
		}
		width = max(width, w)
	}
	t := intType(k, digits, nullable)
	t.Column = fmt.Sprintf("%s(%d)", intNames[rank], width)
	if k == KindUint {
		t.Column += " unsigned"
	}
	return t
}

func countKind(types []Type, k Kind) int {
	n := 0
	for _, t := range types {
		if t.Kind == k {
			n++
		}
	}
	return n
}

// textLength is how many characters a value of type t takes as a string.
func textLength(t Type) int {
	switch t.Kind {
	case KindInt:
		return t.prec + 1
	case KindUint:
		return t.prec
	case KindDecimal:
		n := t.prec + 1
		if t.Frac > 0 {
			n++
		}
		return n
	case KindDouble:
		// -2.2250738585072014e-308: MySQL says 22 and cuts such values
		return 24
	case KindDate:
		return 10
	case KindDatetime, KindTime:
		n := 19
		if t.Kind == KindTime {
			n = 10
		}
		if t.Frac > 0 {
			n += 1 + int(t.Frac)
		}
		return n
	}
	return t.prec
}

// coerce converts a branch's value to the aggregated result type.
func coerce(d Datum, t Type) Datum {
	if d.IsNull() || d.Kind == t.Kind && (d.Kind != KindDecimal && d.Kind != KindDatetime && d.Kind != KindTime && d.Kind != KindString || d.Frac == t.Frac && d.Coll == t.Coll) {
		return d
	}
	switch t.Kind {
	case KindInt, KindUint:
		return d
	case KindDecimal:
		if r := toDec(d); r.scale < int(t.Frac) {
			return r.rescale(int(t.Frac)).datum()
		} else {
			return r.datum()
		}
	case KindDouble:
		return Datum{Kind: KindDouble, F: toDouble(d)}
	case KindString:
		return Datum{Kind: KindString, S: toText(d), Coll: t.Coll}
	case KindBytes:
		return Datum{Kind: KindBytes, S: toText(d)}
	case KindDatetime:
		key, ok := datetimeKey(d)
		if !ok {
			return Null
		}
		if t.Frac == 0 {
			return Datum{Kind: KindDatetime, S: key[:19]}
		}
		return Datum{Kind: KindDatetime, S: key[:20+int(t.Frac)], Frac: t.Frac}
	case KindTime:
		us, ok := timeMicros(d)
		if !ok {
			return Null
		}
		return Datum{Kind: KindTime, S: formatTime(us, int(t.Frac)), Frac: t.Frac}
	}
	return d
}
