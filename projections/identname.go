package projections

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/readside/readside/expr"
)

// Read table and read column names come from the config and become MySQL
// identifiers on the sink. Quoting makes any legal name safe in SQL, so
// only what MySQL cannot name at all is refused here, before `plan`
// meets it as a server error: MySQL and MariaDB allow 1 to 64 characters
// of the Basic Multilingual Plane except U+0000, and no trailing space.

// maxIdentChars is MySQL's limit on a table or column name, in characters.
const maxIdentChars = 64

// identProblem says why name cannot be a MySQL table or column name, or
// "" if it can.
func identProblem(name string) string {
	switch {
	case name == "":
		return "an empty name cannot be a MySQL identifier"
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8"
	case utf8.RuneCountInString(name) > maxIdentChars:
		return fmt.Sprintf("%d characters, MySQL allows at most %d", utf8.RuneCountInString(name), maxIdentChars)
	case strings.HasSuffix(name, " "):
		return "MySQL names cannot end with a space"
	}
	for _, r := range name {
		if r == 0 || r > 0xFFFF {
			return fmt.Sprintf("MySQL names cannot hold %U (only U+0001 to U+FFFF)", r)
		}
	}
	return ""
}

// readColumnProblem is identProblem plus readside's own prefix: the read
// table's bookkeeping columns start with _rs_, and MySQL column names are
// case-insensitive, so _RS_version would clash too.
func readColumnProblem(name string) string {
	if strings.HasPrefix(strings.ToLower(name), "_rs_") {
		return "the _rs_ prefix is readside's own"
	}
	return identProblem(name)
}

// columnName is the source column a children value names (ok false: it
// is an expression, or nothing MySQL can name). A value that parses as
// one column reference names it (`line id` in backticks included); one
// that does not parse at all and has no parentheses is the column's name
// as written ("line id", "desc'r"), as a projection's columns take it.
// Whether the column exists is the live schema's question.
func columnName(s string) (string, bool) {
	s = strings.TrimSpace(s)
	e, err := expr.Parse(s)
	if err == nil {
		return e.Column()
	}
	if identProblem(s) != "" || strings.ContainsAny(s, "()") {
		return "", false
	}
	return s, true
}
