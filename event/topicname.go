// Topic names. MySQL names may hold any Unicode letter, spaces, quotes and
// backticks; Kafka accepts only [a-zA-Z0-9._-] and at most 249
// characters, and the embedded broker accepts anything, so a bad mapping
// goes unnoticed until a real cluster refuses the topic. The mapping below
// is Kafka-legal for every input, injective for a given prefix (two
// different (db, table) pairs never share a topic), and keeps
// <prefix>.<db>.<table> for names Kafka accepts as they are, the names of
// almost every deployment, so their topics read as the tables they hold:
//
//   - plain pair (both names non-empty, only [a-zA-Z0-9_-]):
//     <prefix>.<db>.<table>, exactly one '.' after the prefix;
//   - any other pair: <prefix>..<esc(db)>.<esc(table)>, where esc keeps
//     [a-zA-Z0-9-], writes '_' as "__" and every other byte of the UTF-8
//     name as '_' and two lowercase hex digits ("a b" → "a_20b",
//     "ü" → "_c3_bc"). The doubled dot after the prefix cannot start a
//     plain pair's part, and esc never writes a '.', so the part after the
//     prefix splits back at its one remaining '.' and each half decodes;
//   - a result longer than 249 characters is cut to 231 and ends with
//     ".." and 16 hex digits of the SHA-256 of the uncut name. No
//     uncut result holds ".." that far from the prefix, so a cut name
//     never equals an uncut one; two cut names are equal only if their
//     uncut names' hashes agree in 64 bits.
//
// Kafka also treats '.' and '_' as the same character in metric names and
// refuses a topic that differs from an existing one only there (e.g.
// db "a_b" table "c" and db "a" table "b_c"); escaping cannot remove that
// without moving plain topics, so `check` reports such pairs
// (TopicCollisions).

package event

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxTopicLen is Kafka's limit on a topic name's length.
const MaxTopicLen = 249

// cutTopicLen is where a too-long topic name is cut: room for ".." and
// 16 hex digits of its hash.
const cutTopicLen = MaxTopicLen - 2 - 16

// TopicFor is the topic of a source table (see the mapping above). The
// prefix must itself be Kafka-legal (config validation checks it).
func TopicFor(prefix, db, table string) string {
	var name string
	if plainTopicPart(db) && plainTopicPart(table) {
		name = prefix + "." + db + "." + table
	} else {
		name = prefix + ".." + escapeTopicPart(db) + "." + escapeTopicPart(table)
	}
	if len(name) <= MaxTopicLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:cutTopicLen] + ".." + hex.EncodeToString(sum[:8])
}

// topicCollisionKey is what Kafka compares when it refuses a topic whose
// name differs from an existing one only by '.' versus '_'.
func topicCollisionKey(topic string) string { return strings.ReplaceAll(topic, ".", "_") }

// TopicCollisions names each pair of captured tables (db.table, as in
// source.tables) whose topics Kafka would refuse to hold together.
func TopicCollisions(prefix string, tables []string) []string {
	var out []string
	first := map[string]string{}
	for _, t := range tables {
		db, table, ok := strings.Cut(t, ".")
		if !ok {
			continue // config validation reports it
		}
		topic := TopicFor(prefix, db, table)
		key := topicCollisionKey(topic)
		if prev, ok := first[key]; ok && prev != t {
			out = append(out, fmt.Sprintf("source.tables %s and %s: their topics %s and %s differ only by '.' and '_', which Kafka treats as one in metric names, so it refuses to create the second",
				prev, t, TopicFor(prefix, strings.Split(prev, ".")[0], prev[strings.Index(prev, ".")+1:]), topic))
			continue
		}
		first[key] = t
	}
	return out
}

// plainTopicPart reports whether s keeps its own name in a topic.
func plainTopicPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !topicKeeps(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

// topicKeeps reports whether esc writes byte c as itself.
func topicKeeps(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// escapeTopicPart writes s in [a-zA-Z0-9_-] only, reversibly.
func escapeTopicPart(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case topicKeeps(c):
			b.WriteByte(c)
		case c == '_':
			b.WriteString("__")
		default:
			b.WriteByte('_')
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
		}
	}
	return b.String()
}
