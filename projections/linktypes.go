package projections

// A link column and the parent key it names. The source's own JOIN
// compares the two columns as the server converts them: a DECIMAL 1.50
// never equals an INT 1; 'abc' compares to a number as 0 (with a warning,
// which a sink's strict session makes an error); a utf8mb4_bin link
// compares case-sensitively against a utf8mb4_general_ci key (the _bin
// collation wins). How far a link's type must agree with its key's
// depends on what readside does with it (linkUse): a children entry's
// `on` is compared in the sink, each side in its own type; a copy's join
// and a children join find parents in a join state with one row per key,
// under the key's collation; an aggregate's joined groups keep each link
// in the key's type (its link columns), where every link value must be
// stored as itself — the same type, or a narrower integer, a shorter
// string of the key's collation, fewer integer digits of the key's
// DECIMAL scale, a shorter VARBINARY. A FOREIGN KEY demands as much.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// linkMismatch says why a link column of type link may not stand for a
// parent key of type key ("" when it may). Types are as sourceTable holds
// them: COLUMN_TYPE, with the charset and collation of a text column.
// use says how far the two must agree.
func linkMismatch(link, key string, use linkUse) string {
	l, k := parseLinkType(link), parseLinkType(key)
	if l.text == k.text {
		return ""
	}
	if use != linkKept {
		switch {
		case l.category() != k.category():
			return fmt.Sprintf("the server compares %s with %s by converting one (text to a number), which a sink's strict session refuses", l.kind, k.kind)
		case l.str && k.str && use == linkMatched:
			return collationMismatch(l, k)
		}
		return ""
	}
	switch {
	case l.integer && k.integer:
		if l.within(k) {
			return ""
		}
		return "a link value outside the key's range could not be stored"
	case l.str && k.str:
		if why := collationMismatch(l, k); why != "" {
			return why
		}
		if l.length > k.length {
			return fmt.Sprintf("a link longer than the key (%d > %d characters) could not be stored", l.length, k.length)
		}
		if l.kind != k.kind && (l.kind == "char" || k.kind == "char") && noPad(k.collation) {
			return fmt.Sprintf("CHAR drops trailing spaces, which the NO PAD collation %s compares", k.collation)
		}
		return ""
	case l.kind == "decimal" && k.kind == "decimal":
		if l.scale == k.scale && l.precision-l.scale <= k.precision-k.scale {
			return ""
		}
		return "a link with other digits than the key's would be rounded or refused"
	case l.kind == "varbinary" && k.kind == "varbinary":
		if l.length <= k.length {
			return ""
		}
		return fmt.Sprintf("a link longer than the key (%d > %d bytes) could not be stored", l.length, k.length)
	}
	return "the server compares these two types by converting one (a DECIMAL 1.50 to an INT, text to a number), which a link kept in the key's type would round or refuse"
}

// collationMismatch says why text link l cannot be matched under text key
// k's collation: the source compares them under another. Under the same
// collation, or a link of a non-Unicode charset against a Unicode key
// (the server converts the link and compares under the key's), it can.
func collationMismatch(l, k linkType) string {
	if l.collation == k.collation || (unicodeCharset(k.charset) && !unicodeCharset(l.charset)) {
		return ""
	}
	return fmt.Sprintf("the two compare under different collations (%s, %s): the source's JOIN picks one by the server's coercibility rules, readside would match under the key's", l.collation, k.collation)
}

// category is the kind of value a type holds, as comparisons convert.
func (t linkType) category() string {
	switch t.kind {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "float", "double", "real", "bit":
		return "number"
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		return "text"
	case "date", "datetime", "timestamp", "time", "year":
		return "time"
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return "binary"
	}
	return t.kind
}

// linkUse is what readside does with a link, which decides the types it
// takes (linkMismatch).
type linkUse int

const (
	// linkCompared: the link is compared with the parent's column in the
	// sink, each in its own type (a children entry's on): only the kind
	// of value must agree.
	linkCompared linkUse = iota
	// linkMatched: parents are found in a join state keyed by the key's
	// type (a copy's join, a children join): text must also be of the
	// collation the source compares under.
	linkMatched
	// linkKept: the link is stored in the key's type (an aggregate's
	// joined groups): every value must fit it as itself.
	linkKept
)

// linkType is a column type as linkMismatch compares them.
type linkType struct {
	text               string // normalized: lower case, no integer display width
	kind               string // the type's name: int, varchar, decimal, …
	integer, str       bool
	unsigned           bool
	length             int64 // characters of a text type, bytes of a binary one
	precision, scale   int
	charset, collation string
}

var displayWidth = regexp.MustCompile(`^(tinyint|smallint|mediumint|int|integer|bigint)\(\d+\)`)

func parseLinkType(def string) linkType {
	t := linkType{text: displayWidth.ReplaceAllString(strings.ToLower(strings.TrimSpace(def)), "$1")}
	typ := t.text
	if i := strings.Index(typ, " character set "); i >= 0 {
		cs := strings.Fields(typ[i+len(" character set "):])
		if len(cs) > 0 {
			t.charset = cs[0]
		}
		if _, coll, ok := strings.Cut(typ, " collate "); ok {
			t.collation = strings.Fields(coll)[0]
		}
		typ = typ[:i]
	}
	t.unsigned = strings.Contains(typ, " unsigned")
	t.kind, _, _ = strings.Cut(strings.Fields(typ)[0], "(")
	args := ""
	if _, rest, ok := strings.Cut(typ, "("); ok {
		args, _, _ = strings.Cut(rest, ")")
	}
	n, _ := strconv.ParseInt(strings.Split(args, ",")[0], 10, 64)
	switch t.kind {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		t.integer = true
	case "char", "varchar":
		t.str, t.length = true, n
	case "tinytext", "text", "mediumtext", "longtext":
		t.str, t.length = true, map[string]int64{"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}[t.kind]
	case "varbinary", "binary":
		t.length = n
	case "decimal", "numeric":
		t.kind = "decimal"
		t.precision = int(n)
		if _, s, ok := strings.Cut(args, ","); ok {
			t.scale, _ = strconv.Atoi(strings.TrimSpace(s))
		}
	}
	return t
}

// within reports whether every value of integer type l fits integer type k.
func (l linkType) within(k linkType) bool {
	bits := map[string]int{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
	lb, kb := bits[l.kind], bits[k.kind]
	switch {
	case l.unsigned == k.unsigned:
		return lb <= kb
	case l.unsigned: // into a signed key: one bit less room
		return lb < kb
	default: // negative links never fit an unsigned key
		return false
	}
}

func unicodeCharset(cs string) bool {
	switch cs {
	case "utf8mb4", "utf8mb3", "utf8", "ucs2", "utf16", "utf16le", "utf32":
		return true
	}
	return false
}

// noPad reports a collation that compares trailing spaces (MariaDB's
// _nopad_ ones, MySQL's 0900 ones).
func noPad(collation string) bool {
	return strings.Contains(collation, "_nopad_") || strings.Contains(collation, "_0900_")
}

// linkTypeError is the refusal of the link at config key cfgKey (its `on`
// entry): column linkCol of table linkTable (of type link) naming parent
// key column keyCol of parentTable (of type key); kept: the link is stored
// as use says.
func linkTypeError(cfgKey, linkTable, linkCol, link, parentTable, keyCol, key string, use linkUse) error {
	why := linkMismatch(link, key, use)
	if why == "" {
		return nil
	}
	keeps := "readside matches links in the sink"
	if use == linkKept {
		keeps = "an aggregate keeps each link in its parent key's type"
	}
	return fmt.Errorf("%s: the link %s.%s is %s but the parent key %s.%s is %s, and %s: %s; fix: give %s.%s the parent key's type (ALTER TABLE … MODIFY), as a FOREIGN KEY requires, or join on a column that has it",
		cfgKey, linkTable, linkCol, link, parentTable, keyCol, key, keeps, why, linkTable, linkCol)
}

// linkUseOf is how p's joins use their links.
func linkUseOf(p *Projection) linkUse {
	if p.Aggregation != nil {
		return linkKept
	}
	return linkMatched
}
