package expr

import "strings"

func (c *call) check(s Schema) (Type, error) {
	c.types = make([]Type, len(c.args))
	consts := make([]*Datum, len(c.args))
	for i, a := range c.args {
		t, err := a.check(s)
		if err != nil {
			return Type{}, err
		}
		c.types[i] = t
		if isConst(a) {
			v, err := a.eval(nil)
			if err != nil {
				return Type{}, errAt(c.at, "%s: argument %d: %v", c.f.Name, i+1, err)
			}
			consts[i] = &v
		}
	}
	t, err := c.f.Type(c.types, consts)
	if err != nil {
		// The argument checks name their function already.
		if msg := err.Error(); strings.HasPrefix(msg, c.f.Name+": ") {
			return Type{}, errAt(c.at, "%s", msg)
		}
		return Type{}, errAt(c.at, "%s: %v", c.f.Name, err)
	}
	c.typ = t
	return t, nil
}

func (c *call) eval(row []Datum) (Datum, error) {
	args := make([]Datum, len(c.args))
	for i, a := range c.args {
		v, err := a.eval(row)
		if err != nil {
			return Null, err
		}
		args[i] = final(v, c.types[i])
	}
	return c.f.Eval(args, c.types)
}
