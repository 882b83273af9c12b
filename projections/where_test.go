package projections

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/readside/readside/event"
)

// whereSource is a source table for the where cases: each column typed
// as the source declares it, the strings with a *_ci collation (MySQL's
// default) unless named otherwise.
func whereSource() *sourceTable {
	ci := "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
	src := &sourceTable{types: map[string]string{
		"status": ci, "total": "decimal(12,2)", "big": "bigint(20) unsigned", "note": ci, "name": ci,
		"flag": "tinyint(1)", "created": "datetime(6)", "code": "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
	}, nullable: map[string]bool{}}
	for c := range src.types {
		src.nullable[c] = true
		src.columns = append(src.columns, c)
	}
	return src
}

// whereRow is one row image of whereSource in the event encoding
// (docs/events.md).
var whereRow = map[string]json.RawMessage{
	"status": json.RawMessage(`"paid"`), "total": json.RawMessage(`"1250.50"`), "big": json.RawMessage(`18446744073709551615`),
	"note": json.RawMessage(`null`), "name": json.RawMessage(`"O'Brien  "`), "flag": json.RawMessage(`1`),
	"created": json.RawMessage(`"2024-03-01 10:00:00.000000"`), "code": json.RawMessage(`"paid"`),
}

// typedWhere compiles text and types it against whereSource, as
// SourceColumns does against the live source.
func typedWhere(t *testing.T, text string) *Filter {
	t.Helper()
	f, err := compileWhere(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if err := f.typeExpr(whereSource()); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return f
}

// TestFilterMatchesLikeSQLWhere: a filter keeps exactly the rows MySQL's
// WHERE keeps (three-valued logic, the column's collation, exact
// numbers). expr's differential tests prove each operator against the
// server; these pin the forms users write.
func TestFilterMatchesLikeSQLWhere(t *testing.T) {
	cases := []struct {
		where string
		want  bool
		why   string
	}{
		{"status <> 'draft'", true, "the documented example"},
		{"status = 'PAID'", true, "a *_ci column compares case-insensitively"},
		{"status != 'paid'", false, "!= is <>"},
		{"total > 1000", true, "decimal against an integer"},
		{"total >= 1250.5", true, "decimals compare by value, not by scale"},
		{"total < 1250.50", false, "equal is not less"},
		{"big = 18446744073709551615", true, "exact beyond 2^53"},
		{"big > 18446744073709551614", true, "exact beyond 2^53"},
		{"big > 18446744073709551615", false, "not greater than itself, exactly"},
		{"total > 1250.5", false, "strictly greater: equal does not pass"},
		{"total <= 1250.5", true, "less or equal: equal passes"},
		{"note = 'x'", false, "a comparison with NULL is UNKNOWN: dropped"},
		{"note <> 'x'", false, "also UNKNOWN"},
		{"NOT note = 'x'", false, "NOT UNKNOWN is UNKNOWN"},
		{"note IS NULL", true, "IS NULL sees the NULL"},
		{"note IS NOT NULL", false, "IS NOT NULL too"},
		{"note <=> NULL", true, "null-safe equality"},
		{"status IN ('new', 'paid')", true, "IN a list"},
		{"status NOT IN ('new', 'paid')", false, "NOT IN a list"},
		{"status NOT IN ('new', NULL)", false, "NOT IN a list with NULL is UNKNOWN"},
		{"status IN ('x', NULL)", false, "no match in a list with NULL is UNKNOWN"},
		{"total BETWEEN 1000 AND 2000", true, "BETWEEN"},
		{"total NOT BETWEEN 1000 AND 2000", false, "NOT BETWEEN"},
		{"name = 'O''Brien'", true, "trailing spaces ignored (PAD SPACE); '' is a quote"},
		{"name LIKE 'o''b%'", true, "LIKE by the column's collation"},
		{"name LIKE 'o_brien%'", true, "_ is one character"},
		{"name NOT LIKE '%x%'", true, "NOT LIKE"},
		{"flag", true, "a bare value is TRUE when non-zero"},
		{"flag AND status = 'paid'", true, "AND"},
		{"status = 'draft' OR total > 1000", true, "OR"},
		{"status = 'draft' OR note = 'x'", false, "FALSE OR UNKNOWN is UNKNOWN"},
		{"status = 'paid' OR note = 'x'", true, "TRUE OR UNKNOWN is TRUE"},
		{"(status = 'draft' OR total > 1000) AND NOT (flag = 0)", true, "parentheses and NOT"},
		{"`status` = \"paid\"", true, "quoted names and double-quoted strings"},
		{"created >= '2024-03-01'", true, "a date string against a datetime"},
		{"total > -5", true, "a negative literal"},
		{"total = '1250.5'", true, "a string compared with a number is read as a number"},
		{"code = 'PAID'", false, "a *_bin column compares case-sensitively, as the source's WHERE"},
		{"code = 'paid  '", true, "a *_bin PAD SPACE column ignores trailing spaces"},
		{"COALESCE(note, 'n') = 'N' AND total * 2 > 2500", true, "functions and arithmetic: the same language as columns"},
		{"CASE WHEN status = 'x' THEN 1 ELSE 0 END", false, "CASE: the same language as columns"},
	}
	for _, c := range cases {
		got, err := typedWhere(t, c.where).Match(event.ImageOf(whereRow))
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %v, want %v (%s)", c.where, got, c.want, c.why)
		}
	}
}

// TestFilterErrors: a where that does not parse or type is refused with
// its position and the fix; one that cannot be evaluated says why
// rather than dropping the row silently.
func TestFilterErrors(t *testing.T) {
	for _, c := range []struct{ where, want, why string }{
		{"status = ", "at offset 9: the expression ends too early", "an operand is missing"},
		{"status = 'x", "at offset 9: unterminated string: close it with '", "an open string"},
		{"a = 1 b = 2", "at offset 6: unexpected \"b\" after a complete expression", "two conditions without AND/OR"},
		{"a NOT 3", "at offset 2: unexpected \"NOT\"", "NOT where IN, BETWEEN or LIKE must follow"},
		{"(a = 1", "at offset 6: expected \")\"", "an open parenthesis"},
		{"a = #", "at offset 4: unexpected character '#'", "a character no expression has"},
		{"a IN ()", "at offset 6: unexpected \")\"", "an empty list"},
		{"COALESCE(score, 0) * (2 +", "at offset 25", "an expression's position"},
	} {
		_, err := compileWhere(c.where)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q: error %v, want %q", c.why, c.where, err, c.want)
		}
	}

	// Typing names the column and the position in the text as written.
	f, err := compileWhere("status = 'x' AND nope > 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.typeExpr(whereSource()); err != nil {
		t.Errorf("a missing column is SourceColumns' problem, not the typing's: %v", err)
	}
	f, _ = compileWhere("status = 'x' AND CAST(total AS DECIMAL(70,2)) > 1")
	if err := f.typeExpr(whereSource()); err == nil || !strings.Contains(err.Error(), "at offset 31") {
		t.Errorf("a typing error: %v, want its offset in the text as written (31)", err)
	}

	f = typedWhere(t, "status = 'paid'")
	if _, err := f.Match(event.ImageOf(map[string]json.RawMessage{})); err == nil {
		t.Error("a column missing from the event must be an error, not a silent false")
	}
	f, _ = compileWhere("status = 'paid'")
	if _, err := f.Match(event.ImageOf(whereRow)); !errors.Is(err, errUntyped) {
		t.Errorf("an untyped filter: %v, want errUntyped (plan it first)", err)
	}
	f, _ = compileWhere("a = 1 AND (b IS NULL OR a IN (c, 2))")
	if got := f.Columns(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Errorf("columns = %v, want a, b, c: each once, in order", got)
	}
}

// TestFilterSQL: the filter's SQL is the text as written, each column
// rendered by the caller: verify and shards put it in a WHERE or under
// IS TRUE on the source, where it keeps the rows Match keeps.
func TestFilterSQL(t *testing.T) {
	f, err := compileWhere("status <> 'draft' AND total > 1")
	if err != nil {
		t.Fatal(err)
	}
	got := f.SQL(func(n string) string { return "s.`" + n + "`" })
	if want := "((s.`status` <> 'draft') AND (s.`total` > 1))"; got != want {
		t.Errorf("SQL = %s, want %s", got, want)
	}
}

// TestFilterExcludesNull: the projection's filter answers for its key
// columns by expr's analysis (expr/notnull_test.go has the cases and the
// soundness proof); no filter excludes nothing.
func TestFilterExcludesNull(t *testing.T) {
	f, err := compileWhere("status <> 'draft' AND note IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	if !f.ExcludesNull("note") || !f.ExcludesNull("status") || f.ExcludesNull("name") {
		t.Errorf("ExcludesNull: note %v, status %v, name %v; want true, true, false",
			f.ExcludesNull("note"), f.ExcludesNull("status"), f.ExcludesNull("name"))
	}
	var none *Filter
	if none.ExcludesNull("note") {
		t.Error("no filter passes every row, NULLs included")
	}
}

// messagesDefs are chat.messages' column definitions as the test bed's
// source declares them (baseConfig's table).
var messagesDefs = map[string]string{"id": "bigint(20)", "sender_id": "int(11)", "created_at": "datetime(6)",
	"body": "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}

// typeWhere types p's filter against a source table of defs, every
// column nullable, as SourceColumns does against the live source before
// any event is evaluated.
func typeWhere(t testing.TB, p *Projection, defs map[string]string) {
	t.Helper()
	src := &sourceTable{types: map[string]string{}, nullable: map[string]bool{}}
	for c, d := range defs {
		src.types[c], src.nullable[c] = d, true
		src.columns = append(src.columns, c)
	}
	if err := p.Where.typeExpr(src); err != nil {
		t.Fatal(err)
	}
}
