package expr_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// jsonCols: a document as MariaDB's JSON type stores it (LONGTEXT
// utf8mb4_bin, here without its JSON_VALID check so that invalid
// documents can be stored), a real JSON column (valid documents only) and
// a short utf8mb4 string.
var jsonCols = []diffCol{{"doc", "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL"}, {"j", "JSON NULL"},
	{"v", "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL"}}

// jsonCorners are the hand-picked documents: duplicate keys, escapes and
// unicode, big and exponent numbers, -0, JSON null, nesting at the depth
// limit and past it, and invalid text of every kind the reader refuses
// (or, for JSON_VALUE, never reaches).
var jsonCorners = []string{
	`{"a": 1, "b": [1,  2 ,{"c":"x"}], "a": 2}`, `[1, [2, 3], {}]`, `"str\ud83d\ude00"`,
	`{"a":"h\u00e9\n\"q\"", "b": null, "c": 1e400, "d": -0, "e": 12345678901234567890123, "f": 1.50E+3, "g": true, "h": false, "k y": "sp", "": 5}`,
	`not json`, `{"a": {"b" :  [ 1 , 2 ] } }`, `{"a": 1, "b": tru}`, `{"a": 1} garbage`, `{"a": 1, "b": [1,2`,
	`01`, `1.`, `.5`, `-`, `-0`, `1E5`, `+1`, `[1,]`, `{"a":1,}`, ``, ` `, `TRUE`, `nul`, "\"a\tb\"", `"a\x"`, `"\u00"`,
	`"\u00e9"`, `1 2`, `{"a" 1}`, `{a:1}`, `[1 2]`, `0x1`, `1e`, `-01`, `"\ud83d"`, `"\udc00"`, `"\ud83d\u0041"`, `"\'"`,
	"{\"a\":1}   ", `2.50e-3`, `null`, `true`, `false`, `""`, `"\u0000"`, `{"a":"\u0000x"}`, `{"a":[]}`, `{"a":{}}`,
	`{"é": "ü", "a": "日本"}`, `{"a":"😀"}`, `[[1],[2,[3]]]`, `{"a":1,"a":{"b":2}}`, `{"a": "abc`, `{"b":[1,2], "a": 3`,
	`[1, 2`, `{"a": {"b":1}}`, `{"x": [1, {"a": 5}], "a": [10, 20, 30]}`, `{"a\"b": 1, "a b": 2}`, `{"\u0061": 7}`,
	"{\"a\":1}\n", "\t{\"a\"\r\n:\t1}", `{"a":-1.5e-10}`, `{"a":"\/\b\f\n\r\t\\"}`, `{"a":"it's"}`, `{"a":"\ude00\ud83d"}`,
	`"abc`, `abc`, `"a" x`, `123`, ` "a"`, `{"a": 1 x}`, `{"a":truex}`, `{"a":[1,2,3],"a":[4]}`, `{"k y": {"": [0]}}`, `{"a":{"x":1},"a":2}`, `{"a":[1],"a":null,"a":3}`, `{"a":[5],"a":[6,7]}`, `{"a":{"x":1},"b":tru,"a":2}`,
	strings.Repeat("[", 31) + "1" + strings.Repeat("]", 31), strings.Repeat("[", 32) + "1" + strings.Repeat("]", 32),
	strings.Repeat(`{"a":`, 31) + "1" + strings.Repeat("}", 31), strings.Repeat(`{"a":`, 32) + "1" + strings.Repeat("}", 32),
	`{"b": ` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `, "a": 1}`, `{"b": ` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `, "a": 1}`,
}

var jsonPaths = []string{`$`, `$.a`, `$.b`, `$.b[2]`, `$.b[2].c`, `$[0]`, `$[1]`, `$[5]`, `$.a[0]`, `$.a[0][0]`, `$.a.b`,
	`$.a[1]`, `$."k y"`, `$.""`, `$.c`, `$.d`, `$.e`, `$.f`, `$.g`, `$.h`, `$.x[1].a`, `$."é"`, `$."a b"`, `$."k y".""[0]`}

// randomJSON is a generated document: nested objects and arrays with
// random white space, duplicate keys, escaped and raw unicode strings and
// numbers in every spelling; about one in four is cut short (invalid).
func randomJSON(r *rand.Rand) string {
	var b strings.Builder
	ws := func() {
		for range r.IntN(3) {
			b.WriteByte(" \t\n\r"[r.IntN(4)])
		}
	}
	keys := []string{"a", "b", "c", "k y", "é", "a", "x", `\u0061`, ""}
	strs := []string{"x", `h\u00e9`, `\ud83d\ude00`, "😀", `q\"q`, `back\\slash`, `\n\t`, "日本", "", `\/`, "it's"}
	nums := []string{"0", "-0", "1", "-12", "1.5", "1.", "2.50e-3", "1E5", "1e+400", "12345678901234567890123", "-1.0E-7"}
	var value func(depth int)
	value = func(depth int) {
		ws()
		switch k := r.IntN(10); {
		case k < 2 && depth < 4:
			b.WriteByte('{')
			for i := range r.IntN(4) {
				if i > 0 {
					b.WriteByte(',')
				}
				ws()
				b.WriteString(`"` + keys[r.IntN(len(keys))] + `"`)
				ws()
				b.WriteByte(':')
				value(depth + 1)
			}
			ws()
			b.WriteByte('}')
		case k < 4 && depth < 4:
			b.WriteByte('[')
			for i := range r.IntN(4) {
				if i > 0 {
					b.WriteByte(',')
				}
				value(depth + 1)
			}
			ws()
			b.WriteByte(']')
		case k < 6:
			b.WriteString(`"` + strs[r.IntN(len(strs))] + `"`)
		case k < 8:
			b.WriteString(nums[r.IntN(len(nums))])
		default:
			b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
		}
		ws()
	}
	value(0)
	s := []rune(b.String())
	if r.IntN(4) == 0 && len(s) > 1 {
		s = s[:r.IntN(len(s))]
	}
	return string(s)
}

// TestJSONFunctionsDifferential evaluates JSON_VALUE, JSON_EXTRACT,
// JSON_UNQUOTE and JSON_UNQUOTE(JSON_EXTRACT()) over the corner cases and
// generated documents (FNJSON_SEED overrides the seed) in Go and on
// MariaDB, byte for byte.
func TestJSONFunctionsDifferential(t *testing.T) {
	if server == nil {
		t.Skip("e2e: needs MariaDB; run `make e2e` (or set E2E=1)")
	}
	seed := uint64(rand.Int64())
	if s := os.Getenv("FNJSON_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (FNJSON_SEED=%d reruns it)", seed, seed)
	docs := append([]string{}, jsonCorners...)
	r := rand.New(rand.NewPCG(seed, seed))
	for range 1500 {
		docs = append(docs, randomJSON(r))
	}
	lit := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'" }
	var rows [][]string
	for _, d := range docs {
		v := "NULL"
		if len([]rune(d)) <= 255 {
			v = lit(d)
		}
		rows = append(rows, []string{lit(d), "NULL", v})
	}
	rows = append(rows, []string{"NULL", "NULL", "NULL"})
	m := newMatrix(t, jsonCols, nil)
	for from := 0; from < len(rows); from += 500 {
		var values []string
		for i, r := range rows[from:min(from+500, len(rows))] {
			values = append(values, "("+strconv.Itoa(from+i)+", "+strings.Join(r, ", ")+")")
		}
		mustExec(t, m.conn, "INSERT INTO t VALUES "+strings.Join(values, ", "))
	}
	mustExec(t, m.conn, "UPDATE t SET j = doc WHERE JSON_VALID(doc)")
	m = m.reread(t)
	exprs := []string{"JSON_UNQUOTE(doc)", "JSON_UNQUOTE(v)"}
	for _, p := range jsonPaths {
		p = lit(p)
		exprs = append(exprs, "JSON_VALUE(doc, "+p+")", "JSON_EXTRACT(doc, "+p+")", "JSON_UNQUOTE(JSON_EXTRACT(doc, "+p+"))",
			"JSON_VALUE(v, "+p+")", "JSON_EXTRACT(j, "+p+")")
	}
	t.Logf("%d documents, %d expressions", len(m.events), len(exprs))
	m.compare(t, nil, exprs, true)
}
