package expr

// FromEvent converts one column's value as an event carries it (JSON, see
// docs/events.md "Values") to a Datum, by the column's source definition
// (Column.Def).
func FromEvent(raw []byte, def string) (Datum, error) {
	panic("expr.FromEvent: not built yet")
}

// Bind is d as the text to bind for a read column of type t: what MySQL
// stores from the expression's value (numbers as exact digits, temporal
// values in their canonical text, binary strings as bytes). ok is false
// for NULL.
func Bind(d Datum, t Type) (text []byte, binary bool, ok bool) {
	panic("expr.Bind: not built yet")
}
