package cdc

import (
	"strings"
)

// statement is what the tailer needs to know about a QUERY event.
type statement struct {
	kind   string      // "begin", "commit", "xa", "dml", "truncate", "rename", "drop", "partition", "other"
	tables []string    // db.table names the statement touches, as far as parsed
	moves  [][2]string // RENAME pairs, from -> to
}

// parseStatement classifies a QUERY event's SQL. It is deliberately a small
// tokenizer, not a SQL parser: it only has to find the statements that
// change captured tables without row events, and it errs towards reporting
// a captured table (which stops the tailer) rather than missing one.
func parseStatement(defaultDB, sql string) statement {
	toks := tokenize(sql)
	if len(toks) == 0 {
		return statement{kind: "other"}
	}
	first := strings.ToLower(toks[0])
	qualify := func(name string) string {
		if strings.Contains(name, ".") {
			return name
		}
		return defaultDB + "." + name
	}
	switch first {
	case "begin":
		return statement{kind: "begin"}
	case "commit":
		return statement{kind: "commit"}
	case "xa":
		return statement{kind: "xa"}
	case "insert", "update", "delete", "replace":
		st := statement{kind: "dml"}
		for _, t := range toks[1:] {
			st.tables = append(st.tables, qualify(t))
		}
		return st
	case "truncate":
		i := 1
		if i < len(toks) && strings.EqualFold(toks[i], "table") {
			i++
		}
		if i < len(toks) {
			return statement{kind: "truncate", tables: []string{qualify(toks[i])}}
		}
	case "rename":
		// RENAME TABLE a TO b [, c TO d]...
		st := statement{kind: "rename"}
		for i := 2; i+2 < len(toks); i += 3 { // commas are dropped by tokenize
			if strings.EqualFold(toks[i+1], "to") {
				st.moves = append(st.moves, [2]string{qualify(toks[i]), qualify(toks[i+2])})
			}
		}
		return st
	case "alter":
		// ALTER TABLE a ... RENAME [TO|AS] b
		if len(toks) > 2 && strings.EqualFold(toks[1], "table") {
			if moved := partitionMoves(toks, qualify); moved != nil {
				return statement{kind: "partition", tables: moved}
			}
			for i := 3; i < len(toks); i++ {
				if strings.EqualFold(toks[i], "rename") && i+1 < len(toks) {
					j := i + 1
					if strings.EqualFold(toks[j], "to") || strings.EqualFold(toks[j], "as") {
						j++
					}
					if j < len(toks) && !strings.EqualFold(toks[j], "column") && !strings.EqualFold(toks[j], "index") && !strings.EqualFold(toks[j], "key") {
						return statement{kind: "rename", moves: [][2]string{{qualify(toks[2]), qualify(toks[j])}}}
					}
				}
			}
		}
	case "drop":
		if len(toks) > 1 && strings.EqualFold(toks[1], "table") {
			st := statement{kind: "drop"}
			for _, t := range toks[2:] {
				if !strings.EqualFold(t, "if") && !strings.EqualFold(t, "exists") {
					st.tables = append(st.tables, qualify(t))
				}
			}
			return st
		}
	}
	return statement{kind: "other"}
}

// tokenize splits SQL into words and identifiers, unquoting `quoted`
// identifiers and joining db.table, and dropping comments, strings and
// punctuation. Keywords and identifiers come out alike; callers look at
// positions.
func tokenize(sql string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '`':
			j := i + 1
			for j < len(sql) {
				if sql[j] == '`' {
					if j+1 < len(sql) && sql[j+1] == '`' {
						cur.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				cur.WriteByte(sql[j])
				j++
			}
			i = j
		case c == '\'' || c == '"':
			flush()
			j := i + 1
			for j < len(sql) && sql[j] != c {
				if sql[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			flush()
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 3
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-', c == '#':
			flush()
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '.':
			cur.WriteByte('.')
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			cur.WriteByte(c)
		default:
			flush()
		}
	}
	flush()
	return out
}
