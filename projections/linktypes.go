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
// stored as itself — the same type, a shorter string of the key's
// collation, fewer integer digits of the key's DECIMAL scale, a shorter
// VARBINARY (a FOREIGN KEY demands as much), or any integer type against
// an integer key (the link column then takes a type holding both,
// keptLinkType).

import (
	"fmt"
	"strings"

	"github.com/readside/readside/expr"
)

// linkMismatch says why a link column of type link may not stand for a
// parent key of type key ("" when it may). Types are as sourceTable holds
// them: COLUMN_TYPE, with the charset and collation of a text column.
// use says how far the two must agree.
func linkMismatch(link, key string, use linkUse) string {
	l, k := parseLinkType(link), parseLinkType(key)
	if l.same(k) {
		return ""
	}
	if use != linkKept {
		switch {
		case l.category() != k.category():
			return fmt.Sprintf("the server compares %s with %s by converting one (text to a number), which a sink's strict session refuses", l.name, k.name)
		case l.Kind == expr.KindString && k.Kind == expr.KindString && use == linkMatched:
			return collationMismatch(l, k)
		}
		return ""
	}
	switch {
	case l.integer() && k.integer():
		return "" // kept in a type that holds both (keptLinkType)
	case l.Kind == expr.KindString && k.Kind == expr.KindString:
		if why := collationMismatch(l, k); why != "" {
			return why
		}
		if l.Prec() > k.Prec() {
			return fmt.Sprintf("a link longer than the key (%d > %d characters) could not be stored", l.Prec(), k.Prec())
		}
		if l.name != k.name && (l.name == "char" || k.name == "char") && noPad(k.Coll) {
			return fmt.Sprintf("CHAR drops trailing spaces, which the NO PAD collation %s compares", k.Coll)
		}
		return ""
	case l.Kind == expr.KindDecimal && k.Kind == expr.KindDecimal:
		if l.Frac == k.Frac && l.Prec()-int(l.Frac) <= k.Prec()-int(k.Frac) {
			return ""
		}
		return "a link with other digits than the key's would be rounded or refused"
	case l.name == "varbinary" && k.name == "varbinary":
		if l.Prec() <= k.Prec() {
			return ""
		}
		return fmt.Sprintf("a link longer than the key (%d > %d bytes) could not be stored", l.Prec(), k.Prec())
	}
	return "the server compares these two types by converting one (a DECIMAL 1.50 to an INT, text to a number), which a link kept in the key's type would round or refuse"
}

// keptLinkType is the type an aggregate keeps a link of type link to a
// parent key of type key in (both as sourceTable holds them): the key's,
// unless the link is an integer type with values the key's cannot hold
// (a BIGINT or signed link to an INT UNSIGNED key) — then a type that
// holds both. A link beyond the key's range finds no parent, in the
// sink's join state as in the source's JOIN: its row is in no group.
func keptLinkType(link, key string) string {
	l, k := parseLinkType(link), parseLinkType(key)
	switch {
	case !l.integer() || !k.integer() || l.within(k):
		return key
	case k.within(l):
		return link
	case max(l.Prec(), k.Prec()) < 19: // a BIGINT's 19 digits hold both
		return "bigint(20)"
	}
	return "decimal(20,0)"
}

// collationMismatch says why text link l cannot be matched under text key
// k's collation: the source compares them under another. Under the same
// collation, or a link of a non-Unicode charset against a Unicode key
// (the server converts the link and compares under the key's), it can.
func collationMismatch(l, k linkType) string {
	if l.Coll == k.Coll || (unicodeCharset(definitionCharset(k.def)) && !unicodeCharset(definitionCharset(l.def))) {
		return ""
	}
	return fmt.Sprintf("the two compare under different collations (%s, %s): the source's JOIN picks one by the server's coercibility rules, readside would match under the key's", l.Coll, k.Coll)
}

// category is the kind of value a type holds, as comparisons convert.
func (t linkType) category() string {
	switch t.Kind {
	case expr.KindInt, expr.KindUint, expr.KindDecimal, expr.KindDouble:
		return "number"
	case expr.KindString:
		return "text"
	case expr.KindBytes:
		return "binary"
	case expr.KindDate, expr.KindDatetime, expr.KindTime:
		return "time"
	}
	return t.name
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
	// linkKept: the link is stored in the key's type, or for integers in
	// one holding both (an aggregate's joined groups, keptLinkType):
	// every value must fit it as itself.
	linkKept
)

// linkType is a column type as linkMismatch compares them: as the
// expression language types a source column, with its definition and
// its type's name (char and varchar, binary and varbinary are one kind
// there). A type expressions do not offer has only its definition.
type linkType struct {
	expr.Type
	def, name string
}

func parseLinkType(def string) linkType {
	t, err := expr.TypeOfColumn(expr.Column{Def: def})
	if err != nil {
		t = expr.Type{Kind: expr.KindNull}
	}
	name, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(def)), " ")
	name, _, _ = strings.Cut(name, "(")
	return linkType{Type: t, def: def, name: name}
}

// same reports one type, whatever display width an integer shows.
func (t linkType) same(o linkType) bool {
	if t.Kind == expr.KindNull || o.Kind == expr.KindNull {
		return strings.EqualFold(t.def, o.def)
	}
	return t.name == o.name && t.Kind == o.Kind && t.Prec() == o.Prec() && t.Frac == o.Frac && t.Coll == o.Coll
}

func (t linkType) integer() bool {
	return t.Kind == expr.KindInt || t.Kind == expr.KindUint
}

// within reports whether every value of integer type t fits integer type
// k, by their digits (each integer type's range has more than the one
// below it).
func (t linkType) within(k linkType) bool {
	switch {
	case t.Kind == k.Kind:
		return t.Prec() <= k.Prec()
	case t.Kind == expr.KindUint: // into a signed key: its unsigned range needs a wider type
		return t.Prec() < k.Prec()
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
