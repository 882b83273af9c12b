package expr

import (
	"strings"
	"testing"
)

// timeSchema: d (date), dt (datetime(6)), ts (timestamp(6)), tm (time(2)),
// s (a utf8mb4 string), l (a latin1 string), doc (MariaDB's JSON: longtext
// utf8mb4_bin).
func timeSchema(name string) (Column, bool) {
	defs := map[string]string{
		"d":   "date",
		"dt":  "datetime(6)",
		"ts":  "timestamp(6)",
		"tm":  "time(2)",
		"s":   "varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"l":   "varchar(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci",
		"doc": "longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
	}
	d, ok := defs[strings.ToLower(name)]
	return Column{Name: name, Def: d, Nullable: true}, ok
}

// evalOn parses and checks text, then evaluates it with the one column
// it reads set to v.
func evalOn(t *testing.T, text string, v Datum) (string, error) {
	t.Helper()
	e, err := Parse(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if _, err := e.Check(timeSchema); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	got, err := e.Eval([]Datum{v})
	return render(got), err
}

func TestTimeFunctions(t *testing.T) {
	date := func(s string) Datum { return Datum{Kind: KindDate, S: s} }
	dt := func(s string) Datum { return Datum{Kind: KindDatetime, S: s, Frac: 6} }
	str := func(s string) Datum { return Datum{Kind: KindString, S: s, Coll: "utf8mb4_general_ci"} }
	for _, c := range []struct {
		expr string
		in   Datum
		want string
		why  string
	}{
		{"DATE(dt)", dt("2020-02-29 23:59:59.999999"), "2020-02-29", "the date part of a leap day's last microsecond"},
		{"DATE(d)", date("0000-00-00"), "0000-00-00", "a zero date is kept, as the server keeps it"},
		{"DATE(s)", str("2020-00-15"), "2020-00-15", "a zero month in a string is a date for the server"},
		{"DATE(s)", str("2020-02-30"), "NULL", "a day its month lacks is no date: NULL"},
		{"YEAR(s)", str("2020-01-01 24:00:00"), "NULL", "hour 24 is no time: NULL"},
		{"MONTH(d)", date("2020-00-15"), "0", "month 0 comes out as stored"},
		{"DAY(dt)", dt("2020-02-00 13:00:00.000000"), "0", "day 0 comes out as stored"},
		{"HOUR(tm)", Datum{Kind: KindTime, S: "-838:59:59.00", Frac: 2}, "838", "HOUR of a TIME is its hour count, without the sign"},
		{"HOUR(d)", date("2020-01-01"), "0", "a date's hour is 0"},
		{"DATE_FORMAT(s, '%a')", str("2020-00-15"), "Sun", "the server computes a weekday for month 0"},
		{"DATE_FORMAT(s, '%U')", str("2020-00-15"), "613566754", "week numbers of month 0 wrap as the server's unsigned arithmetic"},
		{"DATE_FORMAT(s, '%Y|%y|%m|%c|%d|%e|%D|%j|%U|%u|%V|%v|%X|%x|%w|%f|%H|%h|%p')", str("2020-02-00"),
			"2020|20|02|2|00|0|0th|031|04|05|04|05|2020|2020|5|000000|00|12|AM", "every numeric specifier on day 0, as the server printed it"},
		{"DATE_FORMAT(d, '%W')", date("0000-00-00"), "NULL", "no weekday without month and year"},
		{"DATE_FORMAT(d, '%M')", date("2020-00-15"), "NULL", "no month name for month 0"},
		{"DATE_FORMAT(d, '%j')", date("0000-01-01"), "NULL", "no day of the year in year 0"},
		{"DATE_FORMAT(d, '%Y-%m-%d')", date("0000-00-00"), "0000-00-00", "plain parts of a zero date print"},
		{"DATE_FORMAT(d, '%X-%V %x-%v')", date("2021-01-01"), "2020-52 2020-53", "Jan 1st 2021 (a Friday) is in the last week of 2020"},
		{"DATE_FORMAT(d, '%x-%v')", date("2018-12-31"), "2019-01", "Dec 31st 2018 (a Monday) starts ISO week 1 of 2019"},
		{"DATE_FORMAT(d, '%U %u')", date("2021-01-01"), "00 00", "%U and %u count the days before the first week as week 0"},
		{"DATE_FORMAT(dt, '%h %l %p %r')", dt("2020-01-01 00:30:00.000000"), "12 12 AM 12:30:00 AM", "half past midnight is 12 AM"},
		{"DATE_FORMAT(dt, '%h %I %p %r')", dt("2020-01-01 12:00:00.000000"), "12 12 PM 12:00:00 PM", "noon is 12 PM"},
		{"DATE_FORMAT(dt, '%k %H %h %p')", dt("2020-01-01 13:05:00.000000"), "13 13 01 PM", "one in the afternoon"},
		{"DATE_FORMAT(dt, '%f %D')", dt("2020-01-11 00:00:00.000001"), "000001 11th", "a microsecond; 11th, not 11st"},
		{"DATE_FORMAT(d, '%D')", date("2020-01-13"), "13th", "13th, not 13rd"},
		{"DATE_FORMAT(d, '%D')", date("2020-01-22"), "22nd", "22nd"},
		{"DATE_FORMAT(d, '%% %Q %')", date("2020-01-01"), "% Q %", "%% is %, an unknown specifier is its letter, a trailing % stays"},
		{"UNIX_TIMESTAMP(dt)", dt("1970-01-01 00:00:00.000000"), "0.000000", "the epoch itself is 0"},
		{"UNIX_TIMESTAMP(dt)", dt("2038-01-19 03:14:07.999999"), "2147483647.999999", "the last microsecond of the TIMESTAMP range"},
		{"UNIX_TIMESTAMP(dt)", dt("2038-01-19 03:14:08.000000"), "NULL", "past the TIMESTAMP range: NULL"},
		{"UNIX_TIMESTAMP(dt)", dt("1969-12-31 23:59:59.999999"), "NULL", "before the epoch: NULL"},
		{"UNIX_TIMESTAMP(dt)", dt("0000-00-00 00:00:00.000000"), "NULL", "a zero DATETIME: NULL"},
		{"UNIX_TIMESTAMP(ts)", dt("0000-00-00 00:00:00.000000"), "0.000000", "a zero TIMESTAMP is the epoch's own 0"},
		{"UNIX_TIMESTAMP(d)", date("2020-03-01"), "1583020800", "a DATE is midnight UTC, an integer"},
		{"UNIX_TIMESTAMP(s)", str("2020-01-05"), "1578182400.000000", "a string has six fraction digits"},
		{"bucket(dt, 'month')", dt("2020-01-31 23:59:59.999999"), "2020-01", "the last microsecond of January is January"},
		{"bucket(dt, 'month')", dt("2020-02-01 00:00:00.000000"), "2020-02", "the first microsecond of February is February"},
		{"bucket(d, 'week')", date("2021-01-03"), "2020-W53", "a Sunday ends its ISO week"},
		{"bucket(dt, 'hour')", dt("2020-01-01 13:59:59.999999"), "2020-01-01 13:00:00", "an hour bucket names its start"},
		{"bucket(d, 'day')", date("2024-02-29"), "2024-02-29", "a day bucket is the date"},
		{"bucket(d, 'YEAR')", date("2024-02-29"), "2024", "units are case-insensitive"},
		{"DATE(d)", Null, "NULL", "NULL in, NULL out"},
	} {
		got, err := evalOn(t, c.expr, c.in)
		if err != nil || got != c.want {
			t.Errorf("%s of %q = %s, %v; want %s (%s)", c.expr, c.in.S, got, err, c.want, c.why)
		}
	}
}

func TestTimeFunctionErrors(t *testing.T) {
	for _, c := range []struct {
		expr, want, why string
	}{
		{"DATE(tm)", "of a TIME is not offered", "MySQL adds today's date to a TIME"},
		{"DATE_FORMAT(tm, '%Y')", "of a TIME is not offered", "the same for DATE_FORMAT"},
		{"HOUR(s)", "HOUR of a string is not offered", "MySQL reads a string as a TIME with rules of its own"},
		{"DATE_FORMAT(d, s)", "format must be a string literal", "the format decides the result's length"},
		{"DATE_FORMAT(d, '')", "empty format is always NULL", "a column that is always NULL is a mistake"},
		{"bucket(d, 'quarter')", "unknown: use 'hour', 'day', 'week', 'month' or 'year'", "only the documented units"},
		{"bucket(d, s)", "unit must be a string literal", "the unit decides the bucket's format"},
		{"UNIX_TIMESTAMP(doc + 1)", "not a double", "numbers are not dates here"},
	} {
		checkRefused(t, c.expr, c.want, c.why)
	}
}

// checkRefused checks that Check refuses text with an error containing
// want.
func checkRefused(t *testing.T, text, want, why string) {
	t.Helper()
	e, err := Parse(text)
	if err == nil {
		_, err = e.Check(timeSchema)
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want one containing %q (%s)", text, err, want, why)
	}
}

// The time functions run per row in the projector: a string that is not
// spelled canonically is an error, not a guess.
func TestTimeOfNonCanonicalString(t *testing.T) {
	for _, s := range []string{"20200105", "2020/01/05", "2020-1-5", " 2020-01-05", "2020-01-05x", "2020-01-05 10:00"} {
		if got, err := evalOn(t, "DATE(s)", Datum{Kind: KindString, S: s, Coll: "utf8mb4_general_ci"}); err == nil {
			t.Errorf("DATE(%q) = %s, want an error", s, got)
		}
	}
}

func TestBucketSQL(t *testing.T) {
	for unit, want := range map[string]string{
		"hour": "DATE_FORMAT(`dt`, '%Y-%m-%d %H:00:00')", "day": "DATE_FORMAT(`dt`, '%Y-%m-%d')",
		"week": "DATE_FORMAT(`dt`, '%x-W%v')", "month": "DATE_FORMAT(`dt`, '%Y-%m')", "Year": "DATE_FORMAT(`dt`, '%Y')",
	} {
		e, err := Parse("bucket(dt, '" + unit + "')")
		if err != nil {
			t.Fatal(err)
		}
		typ, err := e.Check(timeSchema)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.SQL(func(n string) string { return "`" + n + "`" }); got != want {
			t.Errorf("bucket(dt, %q) renders %s, want %s", unit, got, want)
		}
		if !strings.HasPrefix(typ.Column, "varchar(") {
			t.Errorf("bucket(dt, %q) is a %s, want a varchar", unit, typ.Column)
		}
	}
}

func TestFormatLength(t *testing.T) {
	for _, c := range []struct {
		format string
		want   int
		why    string
	}{
		{"%Y-%m", 7, "the server's varchar(7)"},
		{"%M %W %D", 134, "names count 64, as the server's"},
		{"%x-W%v", 22, "week specifiers hold the 10 digits of a zero date's week"},
		{"%", 1, "a trailing % is itself"},
	} {
		if got := formatLength(c.format); got != c.want {
			t.Errorf("formatLength(%q) = %d, want %d (%s)", c.format, got, c.want, c.why)
		}
	}
}
