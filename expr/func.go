package expr

import "strings"

// Func is one function of the language: how it is typed, how Go computes
// it, and how MySQL spells it. Each lives in a file named for its family
// (fn_string.go, fn_number.go, fn_time.go, fn_json.go, …) and registers
// itself from an init function.
type Func struct {
	// Name is the MySQL name, upper case (CONCAT, DATE_FORMAT).
	Name string
	// MinArgs and MaxArgs bound the argument count (MaxArgs -1: any).
	MinArgs, MaxArgs int
	// Type gives the result type from the arguments' types. consts holds,
	// per argument, its value when the argument is a constant (a literal,
	// or built of literals only), else nil: DATE_FORMAT's format or a
	// JSON path must be constant to type the result. An error names what
	// is wrong and the fix; the caller adds the position.
	Type func(args []Type, consts []*Datum) (Type, error)
	// Eval computes the function in Go, equal to MySQL's result for the
	// same arguments, byte for byte. It is called with the arguments'
	// values in order; types are the same as Type was given (a DECIMAL
	// argument arrives at its type's scale, as MySQL's val_str gives it;
	// an argument's string form is toText, convert.go, not Datum.Text,
	// which shows a double as the text protocol does). An error is
	// a row the projection cannot map (the caller dead-letters it or
	// stops, per on_error), as MySQL would refuse it (e.g. BIGINT out of
	// range).
	Eval func(args []Datum, types []Type) (Datum, error)
	// SQL renders a call as MySQL text from its arguments' texts; nil
	// means NAME(arg, arg, …).
	SQL func(args []string) string
}

var funcs = map[string]*Func{}

// register adds f to the language; called from init functions only.
func register(f Func) {
	name := strings.ToUpper(f.Name)
	if _, dup := funcs[name]; dup {
		panic("expr: function " + name + " registered twice")
	}
	f.Name = name
	funcs[name] = &f
}

// lookup finds a function by its name in any case.
func lookup(name string) (*Func, bool) {
	f, ok := funcs[strings.ToUpper(name)]
	return f, ok
}

// Functions are the names of every function the language offers, for
// messages and docs.
func Functions() []string {
	out := make([]string, 0, len(funcs))
	for n := range funcs {
		out = append(out, n)
	}
	return out
}
