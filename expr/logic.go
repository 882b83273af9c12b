package expr

// Three-valued logic: a value is TRUE when it is a non-zero number (a
// string or temporal value read as a number), FALSE when zero, UNKNOWN
// when NULL. Operators give 1, 0 or NULL, as MySQL's do.

// truth maps a value to TRUE/FALSE; known is false for NULL.
func truth(d Datum) (t, known bool) {
	switch d.Kind {
	case KindNull:
		return false, false
	case KindInt:
		return d.I != 0, true
	case KindUint:
		return d.U != 0, true
	case KindDecimal:
		return toDec(d).sign() != 0, true
	case KindDouble:
		return d.F != 0, true
	case KindDate, KindDatetime, KindTime:
		return temporalNumber(d).sign() != 0, true
	}
	return toDouble(d) != 0, true
}

func and3(a, b Datum) Datum {
	at, ak := truth(a)
	bt, bk := truth(b)
	switch {
	case ak && !at || bk && !bt:
		return boolDatum(false)
	case ak && bk:
		return boolDatum(true)
	}
	return Null
}

func or3(a, b Datum) Datum {
	at, ak := truth(a)
	bt, bk := truth(b)
	switch {
	case ak && at || bk && bt:
		return boolDatum(true)
	case ak && bk:
		return boolDatum(false)
	}
	return Null
}

func not3(a Datum) Datum {
	t, known := truth(a)
	if !known {
		return Null
	}
	return boolDatum(!t)
}

func (l *logic) check(s Schema) (Type, error) {
	a, err := l.l.check(s)
	if err != nil {
		return Type{}, err
	}
	b, err := l.r.check(s)
	if err != nil {
		return Type{}, err
	}
	return boolType(a.Nullable || b.Nullable), nil
}

func (l *logic) eval(row []Datum) (Datum, error) {
	a, err := l.l.eval(row)
	if err != nil {
		return Null, err
	}
	if l.op != opXor {
		// Short-circuit as MySQL does, so that an error the right side
		// would raise is not raised when the left side decides.
		if t, known := truth(a); known && t == (l.op == opOr) {
			return boolDatum(t), nil
		}
	}
	b, err := l.r.eval(row)
	if err != nil {
		return Null, err
	}
	switch l.op {
	case opAnd:
		return and3(a, b), nil
	case opOr:
		return or3(a, b), nil
	}
	at, ak := truth(a)
	bt, bk := truth(b)
	if !ak || !bk {
		return Null, nil
	}
	return boolDatum(at != bt), nil
}

func (n *not) check(s Schema) (Type, error) {
	a, err := n.x.check(s)
	if err != nil {
		return Type{}, err
	}
	return boolType(a.Nullable), nil
}

func (n *not) eval(row []Datum) (Datum, error) {
	v, err := n.x.eval(row)
	if err != nil {
		return Null, err
	}
	return not3(v), nil
}

// True reports whether d is TRUE as a WHERE clause takes it: not NULL
// and not zero (a string or temporal value read as a number).
func (d Datum) True() bool {
	t, known := truth(d)
	return known && t
}
