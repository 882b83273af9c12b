package expr

// The JSON functions: JSON_VALUE(doc, path), JSON_EXTRACT(doc, path) with
// one path, JSON_UNQUOTE(text), equal to MariaDB 10.11's results
// (jsondoc.go says how its reader behaves). MariaDB stores JSON as
// LONGTEXT, so a document is a utf8mb4 string (or a MySQL 8 JSON value);
// documents in other character sets are refused, as \u escapes could name
// characters they cannot hold.

import (
	"fmt"
	"strings"
)

func init() {
	register(Func{Name: "JSON_VALUE", MinArgs: 2, MaxArgs: 2,
		Type: func(args []Type, consts []*Datum) (Type, error) {
			return jsonPathFuncType("JSON_VALUE", args, consts, 1)
		},
		Eval: func(args []Datum, _ []Type) (Datum, error) {
			return jsonPathEval(args, jsonValue)
		},
	})
	register(Func{Name: "JSON_EXTRACT", MinArgs: 2, MaxArgs: 2,
		Type: func(args []Type, consts []*Datum) (Type, error) {
			return jsonPathFuncType("JSON_EXTRACT", args, consts, 2)
		},
		Eval: func(args []Datum, _ []Type) (Datum, error) {
			return jsonPathEval(args, jsonExtract)
		},
	})
	register(Func{Name: "JSON_UNQUOTE", MinArgs: 1, MaxArgs: 1,
		Type: func(args []Type, _ []*Datum) (Type, error) {
			chars, err := jsonDocChars("JSON_UNQUOTE", args[0])
			if err != nil {
				return Type{}, err
			}
			return jsonTextType(chars, "utf8mb4_bin"), nil
		},
		Eval: func(args []Datum, _ []Type) (Datum, error) {
			if args[0].IsNull() {
				return Null, nil
			}
			return Datum{Kind: KindString, S: jsonUnquote(args[0].S), Coll: "utf8mb4_bin"}, nil
		},
	})
}

// jsonPathFuncType types JSON_VALUE and JSON_EXTRACT: the document's
// string type (its collation kept) with room for grow times its length,
// as the server sizes them.
func jsonPathFuncType(fn string, args []Type, consts []*Datum, grow int) (Type, error) {
	chars, err := jsonDocChars(fn, args[0])
	if err != nil {
		return Type{}, err
	}
	if consts[1] == nil || consts[1].Kind != KindString {
		return Type{}, fmt.Errorf("%s's path must be a string literal such as '$.name'", fn)
	}
	if _, err := parseJSONPath(consts[1].S); err != nil {
		return Type{}, err
	}
	coll := args[0].Coll
	if args[0].Kind != KindString {
		coll = "utf8mb4_bin"
	}
	return jsonTextType(chars*int64(grow), coll), nil
}

func jsonPathEval(args []Datum, f func(string, []jsonStep) (string, bool)) (Datum, error) {
	if args[0].IsNull() || args[1].IsNull() {
		return Null, nil
	}
	steps, err := parseJSONPath(args[1].S)
	if err != nil {
		return Null, err
	}
	s, ok := f(args[0].S, steps)
	if !ok {
		return Null, nil
	}
	coll := args[0].Coll
	if args[0].Kind != KindString {
		coll = "utf8mb4_bin"
	}
	return Datum{Kind: KindString, S: s, Coll: coll}, nil
}

// jsonDocChars checks that t can hold a JSON document the functions read
// and gives its length in characters as the server counts it (a TEXT
// type's is its length in bytes).
func jsonDocChars(fn string, t Type) (int64, error) {
	switch t.Kind {
	case KindNull:
		return 0, nil
	case KindJSON:
		return 1<<32 - 1, nil
	case KindString:
		if !strings.HasPrefix(t.Coll, "utf8mb4_") {
			return 0, fmt.Errorf("%s reads utf8mb4 documents only, not %s: store the document in a JSON or utf8mb4 column", fn, t.Coll)
		}
		n, err := stringChars(strings.ToLower(t.Column))
		if err != nil {
			return 1<<32 - 1, nil // a length it cannot tell: the longest
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s takes a JSON document (a JSON or utf8mb4 string column), not a %s", fn, t.Kind)
}

// jsonTextType is the utf8mb4 string column the server gives a result of
// chars characters: VARCHAR up to 512, then the smallest TEXT type whose
// bytes hold it.
func jsonTextType(chars int64, coll string) Type {
	var col string
	switch bytes := chars * 4; {
	case chars <= 512:
		col = fmt.Sprintf("varchar(%d)", chars)
	case bytes <= 1<<16-1:
		col = "text"
	case bytes <= 1<<24-1:
		col = "mediumtext"
	default:
		col = "longtext"
	}
	return Type{Kind: KindString, Column: col + " CHARACTER SET utf8mb4 COLLATE " + coll, Nullable: true, Coll: coll}
}
