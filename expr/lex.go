package expr

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer reads MySQL's expression tokens with their byte offsets, so
// that every error can point at the text it is about.

type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // a name, plain (text as written) or backquoted (tok.quoted)
	tInt            // digits only
	tDec            // digits with a point
	tFloat          // digits with an exponent
	tString         // a quoted string, escapes resolved
	tOp             // punctuation and operators
)

type token struct {
	kind   tokKind
	text   string // the name, the digits, the string's value or the operator
	pos    int
	quoted bool // a backquoted name, never a keyword
}

// ops are the operators and punctuation the language knows, longest first.
var ops = []string{"<=>", "<=", ">=", "<>", "!=", "&&", "||", "<<", ">>", "=", "<", ">", "(", ")", ",", "+", "-", "*", "/", "%", "!", "~", "&", "|", "^", "."}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\'' || c == '"':
			str, end, err := lexString(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tString, text: str, pos: i})
			i = end
		case c == '`':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '`' {
					if j+1 < len(s) && s[j+1] == '`' {
						b.WriteByte('`')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, errAt(i, "unterminated `name`: close it with a backquote")
			}
			if b.Len() == 0 {
				return nil, errAt(i, "empty `` name: name a column")
			}
			out = append(out, token{kind: tIdent, text: b.String(), pos: i, quoted: true})
			i = j + 1
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			t, end, err := lexNumber(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i = end
		case c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if r == '_' || r == '$' || r >= '0' && r <= '9' || r < 0x80 && unicode.IsLetter(r) || r >= 0x80 && r != utf8.RuneError {
					j += n
					continue
				}
				break
			}
			if j == i {
				return nil, errAt(i, "invalid UTF-8 in the expression: write it in UTF-8")
			}
			out = append(out, token{kind: tIdent, text: s[i:j], pos: i})
			i = j
		default:
			op := ""
			for _, o := range ops {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, errAt(i, "unexpected character %q: expressions use columns, literals, operators and function calls", rune(c))
			}
			out = append(out, token{kind: tOp, text: op, pos: i})
			i += len(op)
		}
	}
	return append(out, token{kind: tEOF, pos: len(s)}), nil
}

// lexNumber scans a numeric literal at s[i]: 12, 1.5, .5, 1e3, 1.5E-3.
// A name may not start right after it (12abc), as in MySQL where that
// would be an identifier; here it is refused.
func lexNumber(s string, i int) (token, int, error) {
	j, kind := i, tInt
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j < len(s) && s[j] == '.' {
		kind = tDec
		j++
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			kind, j = tFloat, k
		}
	}
	if j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 0x80) {
		return token{}, 0, errAt(i, "a number runs into a name: put a space or an operator between them, or backquote a name that starts with digits")
	}
	return token{kind: kind, text: s[i:j], pos: i}, j, nil
}

// lexString scans the string literal opening at s[i] (its quote) with
// MySQL's escapes (sql_mode without NO_BACKSLASH_ESCAPES): \0 \' \" \b
// \n \r \t \Z \\, a doubled quote, and \x for any other x. \% and \_ keep
// their backslash, as MySQL does, so that a LIKE pattern still sees it.
func lexString(s string, i int) (string, int, error) {
	quote := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '\\' && j+1 < len(s):
			j++
			switch e := s[j]; e {
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'Z':
				b.WriteByte(0x1a)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		case c == quote:
			if j+1 < len(s) && s[j+1] == quote {
				b.WriteByte(quote)
				j++
				continue
			}
			str := b.String()
			if !utf8.ValidString(str) {
				return "", 0, errAt(i, "the string is not valid UTF-8: write it in UTF-8")
			}
			return str, j + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errAt(i, "unterminated string: close it with %c", quote)
}
