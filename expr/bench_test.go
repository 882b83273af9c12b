package expr

import "testing"

// BenchmarkEval: typical computed columns on one row, as the projector
// evaluates them per event.
func BenchmarkEval(b *testing.B) {
	row := map[string]Datum{
		"i": {Kind: KindInt, I: 123456},
		"d": {Kind: KindDecimal, S: "1250.50", Frac: 2},
		"s": {Kind: KindString, S: "Paid", Coll: "utf8mb4_general_ci"},
	}
	for _, text := range []string{
		"i / 100",
		"i * 2 + 1",
		"d * 2",
		"CASE WHEN s = 'paid' THEN 1 WHEN s IN ('new', 'open') THEN 2 ELSE 0 END",
		"IF(i > 1000 AND s LIKE 'p%', 'big', 'small')",
	} {
		e, err := Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Check(testSchema); err != nil {
			b.Fatal(err)
		}
		vals := make([]Datum, len(e.Columns()))
		for i, n := range e.Columns() {
			vals[i] = row[n]
		}
		b.Run(text, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Eval(vals); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFromEvent: one event value to a Datum, per column per row.
func BenchmarkFromEvent(b *testing.B) {
	for _, c := range []struct{ raw, def string }{
		{`123456`, "bigint(20)"},
		{`"1250.50"`, "decimal(12,2)"},
		{`"paid"`, "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{`"2024-03-01 10:00:00.000000"`, "datetime(6)"},
	} {
		b.Run(c.def, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FromEvent([]byte(c.raw), c.def); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
