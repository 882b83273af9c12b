package sinks

import (
	"fmt"
	"strconv"

	"github.com/readside/readside/projections"
)

// The pipeline sends a batch's statements as text with their values
// written in as SQL literals. The driver can do the same
// (interpolateParams), but only after database/sql has copied, converted
// and checked every argument: for upserts of 40,000 values that was ~15%
// of a projector's CPU in a narrow drain (bench/results/history/tuning-log.md, entry
// 32). The literals are what the driver writes for the same values, for
// a session without NO_BACKSLASH_ESCAPES (pipeline connections clear it:
// session's literals) and a connection charset in which no multibyte
// character holds a backslash byte (interpolationSafe).

// appendStatement appends query to buf with each ? placeholder replaced
// by the next of args as a literal. A ? inside a quoted string, a quoted
// identifier or a comment is text, not a placeholder.
func appendStatement(buf []byte, query string, args []any) ([]byte, error) {
	n := 0
	for i := 0; i < len(query); {
		// Copy up to the next byte that needs a look.
		j := i
		for j < len(query) && !sqlSpecial[query[j]] {
			j++
		}
		buf = append(buf, query[i:j]...)
		if j == len(query) {
			break
		}
		i = j
		switch c := query[i]; c {
		case '?':
			if n == len(args) {
				return buf, fmt.Errorf("statement has more placeholders than its %d values", len(args))
			}
			var err error
			if buf, err = appendLiteral(buf, args[n]); err != nil {
				return buf, fmt.Errorf("value %d: %w", n+1, err)
			}
			n++
			i++
		case '\'', '"', '`':
			end := quotedEnd(query, i)
			buf = append(buf, query[i:end]...)
			i = end
		case '/', '#', '-':
			end := commentEnd(query, i)
			buf = append(buf, query[i:end]...)
			i = end
		}
	}
	if n != len(args) {
		return buf, fmt.Errorf("statement has %d placeholders for %d values", n, len(args))
	}
	return buf, nil
}

// sqlSpecial marks the bytes that may start a placeholder, a quoted
// string or identifier, or a comment.
var sqlSpecial = func() (t [256]bool) {
	for _, c := range "?'\"`/#-" {
		t[c] = true
	}
	return t
}()

// quotedEnd is the index just past the string or identifier opening at
// i (the end of query when it is unterminated). In strings a backslash
// escapes the next byte; a doubled quote is read as two strings, which
// comes to the same.
func quotedEnd(query string, i int) int {
	q := query[i]
	for j := i + 1; j < len(query); j++ {
		switch query[j] {
		case q:
			return j + 1
		case '\\':
			if q != '`' {
				j++
			}
		}
	}
	return len(query)
}

// commentEnd is the index just past the comment starting at i, or i+1
// when the byte there starts none (a division, a minus).
func commentEnd(query string, i int) int {
	rest := query[i:]
	switch {
	case len(rest) >= 2 && rest[0] == '/' && rest[1] == '*':
		for j := i + 2; j+1 < len(query); j++ {
			if query[j] == '*' && query[j+1] == '/' {
				return j + 2
			}
		}
		return len(query)
	case rest[0] == '#',
		len(rest) >= 3 && rest[0] == '-' && rest[1] == '-' && (rest[2] == ' ' || rest[2] == '\t' || rest[2] == '\n' || rest[2] == '\r'):
		for j := i; j < len(query); j++ {
			if query[j] == '\n' {
				return j + 1
			}
		}
		return len(query)
	}
	return i + 1
}

// appendLiteral appends v as an SQL literal, as the driver writes it.
func appendLiteral(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, "NULL"...), nil
	case *projections.Value:
		return appendValue(buf, v), nil
	case string:
		return appendQuoted(append(buf, '\''), v), nil
	case []byte:
		if v == nil {
			return append(buf, "NULL"...), nil
		}
		return appendQuoted(append(buf, "_binary'"...), v), nil
	case int:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(buf, v, 10), nil
	case uint32:
		return strconv.AppendUint(buf, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(buf, v, 10), nil
	case *uint64:
		return strconv.AppendUint(buf, *v, 10), nil
	case float64:
		return strconv.AppendFloat(buf, v, 'g', -1, 64), nil
	case bool:
		if v {
			return append(buf, '1'), nil
		}
		return append(buf, '0'), nil
	}
	return buf, fmt.Errorf("no SQL literal for a %T", v)
}

// appendValue appends a read column's value as a literal.
func appendValue(buf []byte, v *projections.Value) []byte {
	switch v.Kind() {
	case projections.TextValue:
		return appendQuoted(append(buf, '\''), v.Bytes())
	case projections.BytesValue:
		return appendQuoted(append(buf, "_binary'"...), v.Bytes())
	case projections.UintValue:
		return strconv.AppendUint(buf, v.Uint(), 10)
	}
	return append(buf, "NULL"...)
}

// appendQuoted appends s with backslash escapes and the closing quote.
func appendQuoted[T string | []byte](buf []byte, s T) []byte {
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && sqlEscape[s[j]] == 0 {
			j++
		}
		buf = append(buf, s[i:j]...)
		if j == len(s) {
			break
		}
		buf = append(buf, '\\', sqlEscape[s[j]])
		i = j + 1
	}
	return append(buf, '\'')
}

// sqlEscape is, for each byte a quoted literal must escape, the letter
// after its backslash (the driver's set: NUL, newline, carriage return,
// Ctrl-Z, both quotes and the backslash).
var sqlEscape = func() (t [256]byte) {
	t[0], t['\n'], t['\r'], t['\x1a'] = '0', 'n', 'r', 'Z'
	t['\''], t['"'], t['\\'] = '\'', '"', '\\'
	return t
}()
