package expr

// A JSON reader that behaves as MariaDB's json_lib does, because the JSON
// functions' results depend on how it reads, not only on the document:
//
//   - It accepts what json_lib accepts: "1." is a number, an unknown
//     escape ("\x") is the character itself, containers nest at most 31
//     deep, raw control characters in strings and lone surrogates are
//     errors.
//   - JSON_VALUE reads only as far as its match: the rest of the document
//     is never looked at ('{"a": 1, "b": tru' gives 1; '01' gives 0).
//     JSON_EXTRACT reads the whole document and gives NULL for any error.
//   - JSON_EXTRACT gives a scalar as written (escapes, exponents, -0 kept)
//     and an object or array re-spaced: ", " between items, ": " after
//     keys, no other white space. MySQL 8 normalizes instead (its JSON
//     type re-serializes numbers and strings), so its text differs.
//   - A member found by key is the first with that key (duplicates kept).
//   - [0] of a value that is not an array is the value itself.

import (
	"strings"
	"unicode/utf8"
)

// maxJSONDepth is json_lib's nesting limit: 31 levels of containers read,
// the 32nd is an error.
const maxJSONDepth = 31

type jsonReader struct {
	s     string
	i     int
	bad   bool
	depth int // containers around the value search stopped at
}

func (r *jsonReader) ws() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) fail() bool { r.bad = true; return false }

// peek is the next byte after white space, 0 at the end.
func (r *jsonReader) peek() byte {
	r.ws()
	if r.i == len(r.s) {
		return 0
	}
	return r.s[r.i]
}

// scalar reads a string, number or literal at r.i and returns its text.
func (r *jsonReader) scalar() (string, bool) {
	c := r.peek() // past white space: the scalar starts here
	start := r.i
	switch {
	case c == '"':
		if _, ok := r.str(); !ok {
			return "", false
		}
	case c == '-' || c >= '0' && c <= '9':
		if !r.number() {
			return "", false
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if strings.HasPrefix(r.s[r.i:], lit) {
				r.i += len(lit)
				return r.s[start:r.i], true
			}
		}
		return "", r.fail()
	default:
		return "", r.fail()
	}
	return r.s[start:r.i], true
}

func (r *jsonReader) number() bool {
	digits := func() int {
		n := 0
		for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.s[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.s) && r.s[r.i] == '0':
		r.i++
	case digits() == 0:
		return r.fail()
	}
	if r.i < len(r.s) && r.s[r.i] == '.' {
		r.i++
		digits()
	}
	if r.i < len(r.s) && (r.s[r.i] == 'e' || r.s[r.i] == 'E') {
		r.i++
		if r.i < len(r.s) && (r.s[r.i] == '+' || r.s[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return r.fail()
		}
	}
	return true
}

// str reads a string at r.i (its opening quote) and gives its unescaped
// value.
func (r *jsonReader) str() (string, bool) {
	r.i++
	var b strings.Builder
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == '"':
			r.i++
			return b.String(), true
		case c < 0x20:
			return "", r.fail()
		case c != '\\':
			b.WriteByte(c)
			r.i++
			continue
		}
		r.i++
		if r.i == len(r.s) {
			return "", r.fail()
		}
		switch e := r.s[r.i]; e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			cp, ok := r.hex4(r.i + 1)
			if !ok {
				return "", r.fail()
			}
			r.i += 4
			if cp >= 0xdc00 && cp <= 0xdfff {
				return "", r.fail()
			}
			if cp >= 0xd800 && cp <= 0xdbff {
				lo, ok := r.hex4(r.i + 3)
				if !ok || r.s[r.i+1] != '\\' || r.s[r.i+2] != 'u' || lo < 0xdc00 || lo > 0xdfff {
					return "", r.fail()
				}
				r.i += 6
				cp = 0x10000 + (cp-0xd800)<<10 + (lo - 0xdc00)
			}
			b.WriteRune(rune(cp))
		default:
			// Any other escaped character stands for itself.
			_, n := utf8.DecodeRuneInString(r.s[r.i:])
			b.WriteString(r.s[r.i : r.i+n])
			r.i += n - 1
		}
		r.i++
	}
	return "", r.fail()
}

func (r *jsonReader) hex4(at int) (int, bool) {
	if at+4 > len(r.s) {
		return 0, false
	}
	n := 0
	for _, c := range []byte(r.s[at : at+4]) {
		switch {
		case c >= '0' && c <= '9':
			n = n*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n*16 + int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// value reads one value at depth (the number of containers around it),
// writing its JSON_EXTRACT text to out when out is not nil.
func (r *jsonReader) value(depth int, out *strings.Builder) bool {
	c := r.peek()
	if c != '{' && c != '[' {
		text, ok := r.scalar()
		if ok && out != nil {
			out.WriteString(text)
		}
		return ok
	}
	if depth >= maxJSONDepth {
		return r.fail()
	}
	r.i++
	closer := byte(']')
	if c == '{' {
		closer = '}'
	}
	if out != nil {
		out.WriteByte(c)
	}
	if r.peek() == closer {
		r.i++
		if out != nil {
			out.WriteByte(closer)
		}
		return true
	}
	for first := true; ; first = false {
		if !first && out != nil {
			out.WriteString(", ")
		}
		if c == '{' {
			raw, _, ok := r.key()
			if !ok {
				return false
			}
			if out != nil {
				out.WriteString(`"` + raw + `": `)
			}
		}
		if !r.value(depth+1, out) {
			return false
		}
		more, ok := r.next(closer)
		if !ok || !more {
			if ok && out != nil {
				out.WriteByte(closer)
			}
			return ok
		}
	}
}

// key reads an object member's key and its colon: the key as written
// (between its quotes) and decoded.
func (r *jsonReader) key() (raw, decoded string, ok bool) {
	if r.peek() != '"' {
		return "", "", r.fail()
	}
	start := r.i
	if decoded, ok = r.str(); !ok {
		return "", "", false
	}
	raw = r.s[start+1 : r.i-1]
	if r.peek() != ':' {
		return "", "", r.fail()
	}
	r.i++
	return raw, decoded, true
}

// next reads what follows a member or element: a comma (more), or the
// container's closer (not more), anything else an error (not ok).
func (r *jsonReader) next(closer byte) (more, ok bool) {
	switch r.peek() {
	case ',':
		r.i++
		return true, true
	case closer:
		r.i++
		return false, true
	}
	return false, r.fail()
}

// search moves r to the first value, in document order, that the path
// steps select and accept takes (MariaDB goes on past a member whose key
// matches but whose value does not lead to an accepted value: with
// duplicate keys '{"a": 1, "a": {"b": 2}}' has $.a.b 2). Keys compare
// decoded when decode is set (JSON_VALUE), else as written (JSON_EXTRACT:
// '{"\u0061": 1}' has no $.a there, and has one for JSON_VALUE). It reads
// and checks only what lies before the value; false is a path that
// selects nothing, or a document error on the way (r.bad).
func (r *jsonReader) search(steps []jsonStep, depth int, decode bool, accept func() bool) bool {
	if len(steps) == 0 {
		r.depth = depth
		return accept()
	}
	st := steps[0]
	c := r.peek()
	switch {
	case st.isIndex && c != '[':
		return st.index == 0 && r.search(steps[1:], depth, decode, accept)
	case !st.isIndex && c != '{':
		return false
	}
	if depth >= maxJSONDepth {
		return r.fail()
	}
	r.i++
	closer := byte(']')
	if !st.isIndex {
		closer = '}'
	}
	if r.peek() == closer {
		return false
	}
	for n := 0; ; n++ {
		match := n == st.index
		if !st.isIndex {
			raw, decoded, ok := r.key()
			if !ok {
				return false
			}
			match = raw == st.key
			if decode {
				match = decoded == st.key
			}
		}
		if match {
			at := r.i
			if r.search(steps[1:], depth+1, decode, accept) {
				return true
			}
			if r.bad || st.isIndex {
				return false
			}
			r.i = at
		}
		if !r.value(depth+1, nil) {
			return false
		}
		if more, _ := r.next(closer); !more {
			return false
		}
	}
}

// jsonExtract is JSON_EXTRACT(doc, path) for one path; ok is false for
// NULL (an invalid document or nothing at the path).
func jsonExtract(doc string, steps []jsonStep) (string, bool) {
	whole := jsonReader{s: doc}
	if !whole.value(0, nil) || whole.peek() != 0 {
		return "", false
	}
	r := jsonReader{s: doc}
	if !r.search(steps, 0, false, func() bool { return true }) {
		return "", false
	}
	var out strings.Builder
	r.value(r.depth, &out)
	return out.String(), true
}

// jsonValue is JSON_VALUE(doc, path): the first scalar the path selects,
// unquoted; ok is false for NULL (no scalar there, JSON null, or a
// document error before the value was read).
func jsonValue(doc string, steps []jsonStep) (string, bool) {
	r := jsonReader{s: doc}
	scalar := func() bool { c := r.peek(); return c != '{' && c != '[' }
	if !r.search(steps, 0, true, scalar) {
		return "", false
	}
	if r.peek() == '"' {
		return r.str()
	}
	text, ok := r.scalar()
	switch {
	case !ok || text == "null":
		return "", false
	case text == "true":
		return "1", true
	case text == "false":
		return "0", true
	}
	return text, true
}

// jsonUnquote is JSON_UNQUOTE(s): the value of a JSON string at the start
// of s (after white space; what follows it is ignored), or s itself when
// s does not start with a valid JSON string.
func jsonUnquote(s string) string {
	r := jsonReader{s: s}
	if r.peek() != '"' {
		return s
	}
	v, ok := r.str()
	if !ok {
		return s
	}
	return v
}
