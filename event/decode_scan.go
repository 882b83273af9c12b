package event

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// scanner walks one JSON document, validating it as it goes.
type scanner struct {
	b []byte
	i int
	d *Decoder
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	// The tailer writes no whitespace: one comparison in the common case.
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object scans an object, calling member with each raw (quoted) member
// name; member must consume the value.
func (s *scanner) object(member func(key []byte) error) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return s.errorf("want an object")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		key, err := s.str()
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.errorf("want ':'")
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.errorf("unterminated object")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or '}'")
		}
	}
}

// plainByte marks the bytes a string scan steps over without a second
// look: anything but the closing quote, a backslash or a control
// character.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// str scans a string and returns it raw, quotes included.
func (s *scanner) str() ([]byte, error) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return nil, s.errorf("want a string")
	}
	start := i
	i++
	for {
		// The scan of plain bytes keeps its index in a local: through
		// s.i, this loop is a quarter of an event's decoding. It takes
		// one byte at a time: eight at a time past the first sixteen
		// takes a wide event from 34.1k to 31.9k instructions, but a
		// narrow poll's Build from 29.3k to 30.5k per event
		// (bench/results/history/tuning-log.md, entry 29).
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			s.i = i
			return nil, s.errorf("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return b[start:s.i], nil
		case c < 0x20:
			s.i = i
			return nil, s.errorf("control character in string")
		}
		// A backslash.
		i++
		if i >= len(b) {
			s.i = i
			return nil, s.errorf("unterminated string")
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+5 > len(b) {
				s.i = i
				return nil, s.errorf("short \\u escape")
			}
			for _, h := range b[i+1 : i+5] {
				if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
					s.i = i
					return nil, s.errorf("bad \\u escape")
				}
			}
			i += 5
		default:
			s.i = i
			return nil, s.errorf("bad escape")
		}
	}
}

// value scans any value and returns it raw.
func (s *scanner) value() ([]byte, error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, s.errorf("want a value")
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{':
		err := s.object(func([]byte) error { _, err := s.value(); return err })
		return s.b[start:s.i], err
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, err := s.value(); err != nil {
				return nil, err
			}
			s.ws()
			if s.i >= len(s.b) {
				return nil, s.errorf("unterminated array")
			}
			if s.b[s.i] == ']' {
				s.i++
				return s.b[start:s.i], nil
			}
			if s.b[s.i] != ',' {
				return nil, s.errorf("want ',' or ']'")
			}
			s.i++
		}
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return s.b[start:s.i], nil
			}
		}
		return nil, s.errorf("want a value")
	}
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() ([]byte, error) {
	b, i := s.b, s.i
	start := i
	digits := func() int {
		from := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - from
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		s.i = i
		return nil, s.errorf("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			s.i = i
			return nil, s.errorf("bad number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.i = i
			return nil, s.errorf("bad number")
		}
	}
	s.i = i
	return b[start:i], nil
}

// stringInto decodes a string (or null, which leaves dst alone and
// returns no raw bytes), returning it raw too.
func (s *scanner) stringInto(dst *string) (raw []byte, err error) {
	raw, err = s.value()
	if err != nil || string(raw) == "null" {
		return nil, err
	}
	if raw[0] != '"' {
		return nil, s.errorf("want a string")
	}
	v, err := Unquote(raw)
	*dst = v
	return raw, err
}

// uintInto decodes an unsigned integer (or null, which leaves dst alone).
func (s *scanner) uintInto(dst *uint64) error {
	raw, err := s.value()
	if err != nil || string(raw) == "null" {
		return err
	}
	if v, ok := smallUint(raw); ok {
		*dst = v
		return nil
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return s.errorf("want an unsigned integer, got %s", raw)
	}
	*dst = v
	return nil
}

// smallUint parses up to 19 decimal digits, which cannot overflow a
// uint64 (every version the tailer writes): faster than strconv, which
// the rest goes through.
func smallUint(raw []byte) (v uint64, ok bool) {
	if len(raw) == 0 || len(raw) > 19 {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// null consumes a null where an object or null is wanted; false leaves
// the object to the caller.
func (s *scanner) null() (bool, error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != 'n' {
		return false, nil
	}
	raw, err := s.value()
	if err == nil && string(raw) != "null" {
		err = s.errorf("want an object or null")
	}
	return true, err
}

// plainString reports whether a JSON string's contents (between the
// quotes) are its text as they stand: no escapes, valid UTF-8.
func PlainString(inner []byte) bool {
	ascii := true
	for _, c := range inner {
		if c == '\\' {
			return false
		}
		ascii = ascii && c < 0x80
	}
	return ascii || utf8.Valid(inner)
}

// unquote decodes a raw JSON string. Valid UTF-8 without escapes (every
// column name and almost every value) is a plain conversion; anything
// else goes through encoding/json, for its exact semantics (escapes,
// invalid UTF-8 replaced).
func Unquote(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	ascii := true
	for _, c := range inner {
		if c == '\\' {
			var v string
			err := json.Unmarshal(raw, &v)
			return v, err
		}
		ascii = ascii && c < 0x80
	}
	if !ascii && !utf8.Valid(inner) {
		var v string
		err := json.Unmarshal(raw, &v) // replaces invalid UTF-8 with U+FFFD
		return v, err
	}
	return string(inner), nil
}
