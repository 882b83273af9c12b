// Package sqlquote is the one place names become SQL text: identifiers are
// quoted as identifiers, and names that must sit inside a string literal
// (a table COMMENT, a message a user pastes into a client) are escaped as
// literals. Values never go through here: they are bound as parameters.
package sqlquote

import "strings"

// Ident quotes a MySQL identifier: backticks around it, a backtick inside
// doubled, so reserved words, spaces, quotes and any letter are names.
func Ident(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// Qualified quotes db.name.
func Qualified(db, name string) string { return Ident(db) + "." + Ident(name) }

// Literal writes s as a single-quoted string literal. A quote is doubled
// and a backslash escaped, so the literal is well formed under every
// sql_mode and reads back exactly as s under the sessions readside opens
// (whose sql_mode has no NO_BACKSLASH_ESCAPES); pasted into a session with
// it, a backslash would read as two, never as a syntax error.
func Literal(s string) string {
	return "'" + literalEscaper.Replace(s) + "'"
}

var literalEscaper = strings.NewReplacer("\\", "\\\\", "'", "''")

// LikePrefix is a LIKE pattern (to bind as a parameter, ESCAPE '!')
// matching every string that starts with s: the wildcards % and _ and the
// escape character in s match only themselves.
func LikePrefix(s string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return r.Replace(s) + "%"
}
