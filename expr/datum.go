package expr

// Kind is the class of a value or a type, as MySQL's expression
// evaluation sees it.
type Kind uint8

const (
	KindNull     Kind = iota // SQL NULL (a Datum only; a literal NULL's Type)
	KindInt                  // signed 64-bit integer: Datum.I
	KindUint                 // unsigned 64-bit integer: Datum.U (a YEAR's: Datum.S is its four digits)
	KindDecimal              // exact decimal: Datum.S is its text ("-12.50"), Datum.Frac its scale
	KindDouble               // IEEE double: Datum.F (FLOAT columns are widened to it, as MySQL does)
	KindString               // character string: Datum.S in UTF-8, Datum.Coll its collation
	KindBytes                // binary string (BINARY, VARBINARY, BLOB): Datum.S holds the bytes
	KindDate                 // Datum.S "YYYY-MM-DD" (zero dates kept as written)
	KindDatetime             // Datum.S "YYYY-MM-DD HH:MM:SS[.f]", exactly Datum.Frac fraction digits (TIMESTAMP is in UTC)
	KindTime                 // Datum.S "[-]HHH:MM:SS[.f]", exactly Datum.Frac fraction digits
	KindJSON                 // Datum.S is the document's text
)

var kindNames = [...]string{"NULL", "integer", "unsigned integer", "decimal", "double", "string", "binary string", "date", "datetime", "time", "JSON"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Datum is one value of an expression. Which fields hold it depends on
// Kind (see the constants); the others are zero. Read-only once made.
type Datum struct {
	Kind Kind
	I    int64
	U    uint64
	F    float64
	// S is the text of a decimal, string, binary string, temporal value or
	// JSON document.
	S string
	// Frac is a decimal's scale or a datetime's or time's fraction digits.
	Frac uint8
	// Coll is a character string's collation (e.g. utf8mb4_general_ci),
	// which decides comparisons and case mapping.
	Coll string
}

// Null is SQL NULL.
var Null = Datum{}

// IsNull reports whether d is SQL NULL.
func (d Datum) IsNull() bool { return d.Kind == KindNull }

// Type is the MySQL type of an expression's value, worked out at plan
// time from the source columns' definitions.
type Type struct {
	Kind Kind
	// Column is the read column definition that holds every value of the
	// expression exactly, as CREATE TABLE takes it: "bigint",
	// "bigint unsigned", "decimal(14,4)", "double", "varchar(7) CHARACTER
	// SET utf8mb4 COLLATE utf8mb4_general_ci", "varbinary(20)", "date",
	// "datetime(3)", "time", "json", "longtext CHARACTER SET …".
	Column string
	// Nullable: the expression may be NULL.
	Nullable bool
	// Frac is a decimal's scale or a temporal value's fraction digits.
	Frac uint8
	// Coll is a character string's collation.
	Coll string
	// prec is a decimal's precision, an integer's digits or a string's
	// length in characters (bytes for a binary string): what result
	// types of operators are worked out from, as MySQL does.
	prec int
}

// Prec is a decimal's precision, an integer's digits or a string's length
// in characters (bytes for a binary string), as MySQL works out result
// types from it (SUM's and AVG's precision, for one).
func (t Type) Prec() int { return t.prec }
