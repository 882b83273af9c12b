package expr

// The time functions: DATE, YEAR, MONTH, DAY (DAYOFMONTH), HOUR,
// DATE_FORMAT, UNIX_TIMESTAMP and the time bucket bucket(col, unit), each
// equal to MariaDB 10.11's result under the session readside's verify and
// rebuild use: time_zone '+00:00' and the server's default sql_mode
// (zero dates and zero-in-date values allowed, as stored). TIMESTAMP
// values arrive in UTC, so with that session they mean the same instant
// in Go and on the server whatever the server's own time zone.
//
// A TIME argument is refused where MySQL would first turn it into a date
// by adding the current date (DATE(t), DATE_FORMAT(t, …)): its value
// would change every day.

import (
	"fmt"
	"strconv"
	"strings"
)

// dateFormatColl is DATE_FORMAT's result collation: the connection's,
// which is utf8mb4_general_ci for readside's sessions (the MySQL driver's
// default). The text is ASCII either way.
const dateFormatColl = "utf8mb4_general_ci"

// bucketFormats are the DATE_FORMAT formats bucket(col, unit) means: each
// bucket is a string that sorts in time order and names its period.
var bucketFormats = map[string]string{
	"hour":  "%Y-%m-%d %H:00:00",
	"day":   "%Y-%m-%d",
	"week":  "%x-W%v", // ISO 8601 week: Monday first, week 1 holds the year's first Thursday
	"month": "%Y-%m",
	"year":  "%Y",
}

func init() {
	// Integer column widths are the server's: int(5) for a year, int(3)
	// for the other parts.
	num := func(column string, part func(t mysqlTime) int) (Type, func(t mysqlTime) Datum) {
		return Type{Kind: KindInt, Column: column, Nullable: true},
			func(t mysqlTime) Datum { return Datum{Kind: KindInt, I: int64(part(t))} }
	}
	register(datePart("YEAR", false)(num("int(5)", func(t mysqlTime) int { return t.year })))
	register(datePart("MONTH", false)(num("int(3)", func(t mysqlTime) int { return t.month })))
	register(datePart("DAY", false)(num("int(3)", func(t mysqlTime) int { return t.day })))
	register(datePart("DAYOFMONTH", false)(num("int(3)", func(t mysqlTime) int { return t.day })))
	register(datePart("HOUR", true)(num("int(3)", func(t mysqlTime) int { return t.hour })))
	register(datePart("DATE", false)(Type{Kind: KindDate, Column: "date", Nullable: true},
		func(t mysqlTime) Datum { return Datum{Kind: KindDate, S: t.dateText()} }))
	register(Func{Name: "DATE_FORMAT", MinArgs: 2, MaxArgs: 2,
		Type: func(args []Type, consts []*Datum) (Type, error) {
			if err := dateArg("DATE_FORMAT", args[0], false); err != nil {
				return Type{}, err
			}
			if consts[1] == nil || consts[1].Kind != KindString {
				return Type{}, fmt.Errorf("DATE_FORMAT's format must be a string literal such as '%%Y-%%m', so the result's length is known")
			}
			if consts[1].S == "" {
				return Type{}, fmt.Errorf("DATE_FORMAT with an empty format is always NULL: give a format such as '%%Y-%%m'")
			}
			return dateFormatType(consts[1].S), nil
		},
		Eval: func(args []Datum, _ []Type) (Datum, error) {
			if args[1].IsNull() {
				return Null, nil
			}
			return formatDatum(args[0], args[1].S)
		},
	})
	register(Func{Name: "UNIX_TIMESTAMP", MinArgs: 1, MaxArgs: 1,
		Type: func(args []Type, _ []*Datum) (Type, error) {
			if err := dateArg("UNIX_TIMESTAMP", args[0], false); err != nil {
				return Type{}, err
			}
			frac := unixFrac(args[0])
			if frac == 0 {
				return Type{Kind: KindInt, Column: "bigint(17)", Nullable: true}, nil
			}
			return Type{Kind: KindDecimal, Column: fmt.Sprintf("decimal(%d,%d)", 16+frac, frac), Nullable: true, Frac: frac}, nil
		},
		Eval: func(args []Datum, types []Type) (Datum, error) {
			return unixTimestamp(args[0], types[0])
		},
	})
	register(Func{Name: "BUCKET", MinArgs: 2, MaxArgs: 2,
		Type: func(args []Type, consts []*Datum) (Type, error) {
			if err := dateArg("bucket", args[0], false); err != nil {
				return Type{}, err
			}
			if consts[1] == nil || consts[1].Kind != KindString {
				return Type{}, fmt.Errorf("bucket's unit must be a string literal: 'hour', 'day', 'week', 'month' or 'year'")
			}
			format, ok := bucketFormats[strings.ToLower(consts[1].S)]
			if !ok {
				return Type{}, fmt.Errorf("bucket unit %q is unknown: use 'hour', 'day', 'week', 'month' or 'year'", consts[1].S)
			}
			return dateFormatType(format), nil
		},
		Eval: func(args []Datum, _ []Type) (Datum, error) {
			return formatDatum(args[0], bucketFormats[strings.ToLower(args[1].S)])
		},
		SQL: func(args []string) string {
			unit := strings.ToLower(strings.Trim(args[1], `'"`))
			return "DATE_FORMAT(" + args[0] + ", '" + bucketFormats[unit] + "')"
		},
	})
}

// datePart makes a one-argument function of a date (and of a TIME when
// timeOK) whose result of type typ is of(t), NULL for NULL or a string
// that is no date.
func datePart(name string, timeOK bool) func(typ Type, of func(t mysqlTime) Datum) Func {
	return func(typ Type, of func(t mysqlTime) Datum) Func {
		return Func{Name: name, MinArgs: 1, MaxArgs: 1,
			Type: func(args []Type, _ []*Datum) (Type, error) {
				return typ, dateArg(name, args[0], timeOK)
			},
			Eval: func(args []Datum, _ []Type) (Datum, error) {
				t, ok, err := timeArg(args[0])
				if !ok || err != nil {
					return Null, err
				}
				return of(t), nil
			},
		}
	}
}

// dateArg checks that t is a type the time functions read: a date, a
// datetime or timestamp, a string holding a date, or NULL; a TIME too
// when timeOK (HOUR), which also refuses strings, whose HOUR MySQL reads
// as a TIME with rules of its own.
func dateArg(fn string, t Type, timeOK bool) error {
	switch t.Kind {
	case KindNull, KindDate, KindDatetime:
		return nil
	case KindString:
		if !timeOK {
			return nil
		}
		return fmt.Errorf("%s of a string is not offered (MySQL reads it as a TIME with rules of its own): "+
			"store the value in a DATETIME column, or CAST it AS DATETIME", fn)
	case KindTime:
		if timeOK {
			return nil
		}
		return fmt.Errorf("%s of a TIME is not offered (MySQL adds the current date, so the value changes daily): "+
			"use a DATE, DATETIME or TIMESTAMP column", fn)
	}
	return fmt.Errorf("%s takes a date, datetime, timestamp or a string holding one, not a %s: "+
		"use a temporal column", fn, t.Kind)
}

// timeArg is brokenDown with NULL passing through as not ok, and a TIME
// read as its hours, minutes and seconds (for HOUR).
func timeArg(d Datum) (mysqlTime, bool, error) {
	switch d.Kind {
	case KindNull:
		return mysqlTime{}, false, nil
	case KindTime:
		t, ok := parseTimeOfDay(d.S)
		if !ok {
			return t, false, fmt.Errorf("time value %q is not in its canonical form", d.S)
		}
		return t, true, nil
	}
	return brokenDown(d)
}

func dateFormatType(format string) Type {
	return Type{Kind: KindString, Nullable: true, Coll: dateFormatColl,
		Column: fmt.Sprintf("varchar(%d) CHARACTER SET utf8mb4 COLLATE %s", formatLength(format), dateFormatColl)}
}

func formatDatum(d Datum, format string) (Datum, error) {
	t, ok, err := timeArg(d)
	if !ok || err != nil {
		return Null, err
	}
	s, ok := dateFormat(t, format)
	if !ok {
		return Null, nil
	}
	return Datum{Kind: KindString, S: s, Coll: dateFormatColl}, nil
}

// unixFrac is the fraction digits of UNIX_TIMESTAMP's result: the
// argument's, and 6 for a string.
func unixFrac(t Type) uint8 {
	switch t.Kind {
	case KindDatetime:
		return t.Frac
	case KindString:
		return 6
	}
	return 0
}

// isTimestamp reports whether t is a TIMESTAMP column's type, whose zero
// value UNIX_TIMESTAMP gives as 0 (a DATETIME's zero gives NULL).
func isTimestamp(t Type) bool {
	return strings.HasPrefix(strings.ToLower(t.Column), "timestamp")
}

func unixTimestamp(d Datum, typ Type) (Datum, error) {
	t, ok, err := timeArg(d)
	if !ok || err != nil {
		return Null, err
	}
	secs, ok := unixSeconds(t)
	if !ok {
		if !isTimestamp(typ) || t != (mysqlTime{}) {
			return Null, nil
		}
		secs = 0
	}
	frac := unixFrac(typ)
	if frac == 0 {
		return Datum{Kind: KindInt, I: secs}, nil
	}
	micro := fmt.Sprintf("%06d", t.micro)
	return Datum{Kind: KindDecimal, S: strconv.FormatInt(secs, 10) + "." + micro[:frac], Frac: frac}, nil
}
