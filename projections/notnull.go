package projections

// A read key column may copy a source column that is nullable when the
// projection's where filter can never pass a row in which that column is
// NULL: such rows never reach the read table, so the read key is never
// NULL. Deciding that is a small abstract evaluation of the filter with
// the column bound to NULL and every other column unknown, in SQL's
// three-valued logic: the filter excludes NULL when TRUE is not among the
// truth values it can take. It is sound (it never accepts a filter that
// lets a NULL through) and deliberately shallow: the forms it understands
// are listed in docs/config.md (`projections.<name>.where`).

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
	isNull
	notNull
)

// ExcludesNull reports whether the filter is never TRUE for a row whose
// column col is NULL, whatever the row's other columns hold.
func (f *Filter) ExcludesNull(col string) bool {
	return f != nil && f.root != nil && truthsIfNull(f.root, col)&tTrue == 0
}

// truthsIfNull is the set of truth values n may take when col is NULL.
func truthsIfNull(n node, col string) truthSet {
	switch t := n.(type) {
	case cmpNode:
		l, r := nullnessIfNull(t.l, col), nullnessIfNull(t.r, col)
		if t.op == "<=>" {
			switch {
			case l == isNull && r == isNull:
				return tTrue
			case l == isNull && r == notNull, l == notNull && r == isNull:
				return tFalse
			}
			return tTrue | tFalse
		}
		return strict(l, r)
	case isNullNode:
		switch nullnessIfNull(t.x, col) {
		case isNull:
			return pick(!t.not)
		case notNull:
			return pick(t.not)
		}
		return tTrue | tFalse
	case inNode:
		// NULL [NOT] IN (…) is UNKNOWN; the list's NULLs are left to tAny.
		return strict(nullnessIfNull(t.x, col), maybeNull)
	case betweenNode:
		// Only the tested value: NOT BETWEEN with a NULL bound can be TRUE.
		return strict(nullnessIfNull(t.x, col), maybeNull)
	case likeNode:
		return strict(nullnessIfNull(t.x, col), maybeNull)
	case logicNode:
		l, r := truthsIfNull(t.l, col), truthsIfNull(t.r, col)
		var out truthSet
		for _, a := range members(l) {
			for _, b := range members(r) {
				out |= combine(t.op, a, b)
			}
		}
		return out
	case notNode:
		var out truthSet
		for _, a := range members(truthsIfNull(t.x, col)) {
			out |= map[truthSet]truthSet{tTrue: tFalse, tFalse: tTrue, tUnknown: tUnknown}[a]
		}
		return out
	case literal:
		tv, known := truth(value(t))
		if !known {
			return tUnknown
		}
		return pick(tv)
	case colRef:
		if string(t) == col {
			return tUnknown // a bare NULL operand is UNKNOWN
		}
	}
	return tAny
}

// nullnessIfNull is what is known of operand n's value when col is NULL.
func nullnessIfNull(n node, col string) nullness {
	switch t := n.(type) {
	case colRef:
		if string(t) == col {
			return isNull
		}
		return maybeNull
	case literal:
		if value(t).kind == vNull {
			return isNull
		}
		return notNull
	}
	// A condition used as a value: NULL exactly when it is UNKNOWN.
	switch ts := truthsIfNull(n, col); {
	case ts == tUnknown:
		return isNull
	case ts&tUnknown == 0:
		return notNull
	}
	return maybeNull
}

// strict is the truth of an operator that is UNKNOWN when an operand is
// NULL (comparisons, IN, BETWEEN, LIKE).
func strict(l, r nullness) truthSet {
	switch {
	case l == isNull || r == isNull:
		return tUnknown
	case l == notNull && r == notNull:
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

// combine is SQL's AND / OR of two single truth values.
func combine(op string, a, b truthSet) truthSet {
	if op == "AND" {
		switch {
		case a == tFalse || b == tFalse:
			return tFalse
		case a == tTrue && b == tTrue:
			return tTrue
		}
		return tUnknown
	}
	switch {
	case a == tTrue || b == tTrue:
		return tTrue
	case a == tFalse && b == tFalse:
		return tFalse
	}
	return tUnknown
}
