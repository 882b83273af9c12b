package expr

// A read key column may copy a source column that is nullable when the
// projection's where condition can never pass a row in which that column
// is NULL: such rows never reach the read table, so the read key is
// never NULL. Deciding that is a small abstract evaluation of the
// condition with the column bound to NULL and every other column
// unknown, in SQL's three-valued logic: the condition excludes NULL when
// TRUE is not among the truth values it can take. It is sound (it never
// accepts a condition that lets a NULL through; TestExcludesNullIsSound
// fails otherwise) and deliberately shallow: the forms it understands
// are listed in docs/config.md (`projections.<name>.where`); any other
// node may take any value.

// truthSet is the set of SQL truth values a condition may take.
type truthSet uint8

const (
	tTrue truthSet = 1 << iota
	tFalse
	tUnknown
	tAny = tTrue | tFalse | tUnknown
)

// nullness is what is known of a value when the column is NULL.
type nullness uint8

const (
	maybeNull nullness = iota
	isNullValue
	notNullValue
)

// ExcludesNull reports whether the expression, read as a WHERE condition
// (a row passes when it IS TRUE), is never TRUE for a row whose column
// col is NULL, whatever the row's other columns hold. col is matched
// exactly: a reference spelled otherwise counts as another column, which
// only makes the answer more cautious.
func (e *Expr) ExcludesNull(col string) bool {
	return e != nil && truthsIfNull(e.root, col)&tTrue == 0
}

// truthsIfNull is the set of truth values n may take when col is NULL.
func truthsIfNull(n node, col string) truthSet {
	switch t := n.(type) {
	case *paren:
		return truthsIfNull(t.x, col)
	case *compare:
		l, r := nullnessIfNull(t.l, col), nullnessIfNull(t.r, col)
		if t.op == cmpNSEQ {
			switch {
			case l == isNullValue && r == isNullValue:
				return tTrue
			case l == isNullValue && r == notNullValue, l == notNullValue && r == isNullValue:
				return tFalse
			}
			return tTrue | tFalse
		}
		return strict(l, r)
	case *isNull:
		switch nullnessIfNull(t.x, col) {
		case isNullValue:
			return pick(!t.not)
		case notNullValue:
			return pick(t.not)
		}
		return tTrue | tFalse
	case *isTruth:
		var out truthSet
		for _, a := range members(truthsIfNull(t.x, col)) {
			want := map[truthValue]truthSet{truthTrue: tTrue, truthFalse: tFalse, truthUnknown: tUnknown}[t.want]
			out |= pick((a == want) != t.not)
		}
		return out
	case *in:
		// NULL [NOT] IN (…) is UNKNOWN; the list's NULLs are left to tAny.
		return strict(nullnessIfNull(t.x, col), maybeNull)
	case *between:
		// Only the tested value: NOT BETWEEN with a NULL bound can be TRUE.
		return strict(nullnessIfNull(t.x, col), maybeNull)
	case *like:
		return strict(nullnessIfNull(t.x, col), maybeNull)
	case *logic:
		l, r := truthsIfNull(t.l, col), truthsIfNull(t.r, col)
		var out truthSet
		for _, a := range members(l) {
			for _, b := range members(r) {
				out |= combine(t.op, a, b)
			}
		}
		return out
	case *not:
		var out truthSet
		for _, a := range members(truthsIfNull(t.x, col)) {
			out |= map[truthSet]truthSet{tTrue: tFalse, tFalse: tTrue, tUnknown: tUnknown}[a]
		}
		return out
	case *literal:
		tv, known := truth(t.d)
		if !known {
			return tUnknown
		}
		return pick(tv)
	case *colRef:
		if t.name == col {
			return tUnknown // a bare NULL operand is UNKNOWN
		}
	}
	return tAny
}

// nullnessIfNull is what is known of operand n's value when col is NULL.
func nullnessIfNull(n node, col string) nullness {
	switch t := n.(type) {
	case *paren:
		return nullnessIfNull(t.x, col)
	case *colRef:
		if t.name == col {
			return isNullValue
		}
		return maybeNull
	case *literal:
		if t.d.Kind == KindNull {
			return isNullValue
		}
		return notNullValue
	case *arith:
		// Arithmetic with a NULL operand is NULL; otherwise a division by
		// zero may still give NULL.
		if nullnessIfNull(t.l, col) == isNullValue || nullnessIfNull(t.r, col) == isNullValue {
			return isNullValue
		}
		return maybeNull
	case *neg:
		if nullnessIfNull(t.x, col) == isNullValue {
			return isNullValue
		}
		return maybeNull
	case *compare, *logic, *not, *isNull, *isTruth, *in, *between, *like:
		// A condition used as a value: NULL exactly when it is UNKNOWN.
		switch ts := truthsIfNull(n, col); {
		case ts == tUnknown:
			return isNullValue
		case ts&tUnknown == 0:
			return notNullValue
		}
	}
	return maybeNull
}

// strict is the truth of an operator that is UNKNOWN when an operand is
// NULL (comparisons, IN, BETWEEN, LIKE).
func strict(l, r nullness) truthSet {
	switch {
	case l == isNullValue || r == isNullValue:
		return tUnknown
	case l == notNullValue && r == notNullValue:
		return tTrue | tFalse
	}
	return tAny
}

func pick(b bool) truthSet {
	if b {
		return tTrue
	}
	return tFalse
}

func members(s truthSet) []truthSet {
	var out []truthSet
	for _, m := range []truthSet{tTrue, tFalse, tUnknown} {
		if s&m != 0 {
			out = append(out, m)
		}
	}
	return out
}

// combine is SQL's AND / OR / XOR of two single truth values.
func combine(op logicOp, a, b truthSet) truthSet {
	switch op {
	case opAnd:
		switch {
		case a == tFalse || b == tFalse:
			return tFalse
		case a == tTrue && b == tTrue:
			return tTrue
		}
		return tUnknown
	case opOr:
		switch {
		case a == tTrue || b == tTrue:
			return tTrue
		case a == tFalse && b == tFalse:
			return tFalse
		}
		return tUnknown
	}
	if a == tUnknown || b == tUnknown {
		return tUnknown
	}
	return pick(a != b)
}
