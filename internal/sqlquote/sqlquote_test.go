package sqlquote

import "testing"

func TestIdent(t *testing.T) {
	cases := []struct{ why, in, want string }{
		{"a plain name is only wrapped", "orders", "`orders`"},
		{"a reserved word becomes a name", "select", "`select`"},
		{"a backtick inside is doubled, so it cannot close the name", "a`b", "`a``b`"},
		{"an injection attempt stays one name", "x`; DROP TABLE t; --", "`x``; DROP TABLE t; --`"},
		{"quotes, spaces and other letters need nothing", "it's \"ü 日本\"", "`it's \"ü 日本\"`"},
	}
	for _, c := range cases {
		if got := Ident(c.in); got != c.want {
			t.Errorf("%s: Ident(%q) = %s, want %s", c.why, c.in, got, c.want)
		}
	}
}

func TestLiteral(t *testing.T) {
	cases := []struct{ why, in, want string }{
		{"plain text is only wrapped", "shop.orders", "'shop.orders'"},
		{"a quote is doubled, valid whatever NO_BACKSLASH_ESCAPES says", "it's", "'it''s'"},
		{"a backslash cannot escape the closing quote", `a\`, `'a\\'`},
		{"a backslash before a quote stays two characters", `\'`, `'\\'''`},
		{"backticks and double quotes need nothing", "`x` \"y\"", "'`x` \"y\"'"},
	}
	for _, c := range cases {
		if got := Literal(c.in); got != c.want {
			t.Errorf("%s: Literal(%q) = %s, want %s", c.why, c.in, got, c.want)
		}
	}
}

func TestLikePrefix(t *testing.T) {
	cases := []struct{ why, in, want string }{
		{"plain text gets the trailing wildcard", "orders#join", "orders#join%"},
		{"an underscore matches only itself", "a_b#join", "a!_b#join%"},
		{"a percent matches only itself", "100%#join", "100!%#join%"},
		{"the escape character itself is escaped", "x!y", "x!!y%"},
	}
	for _, c := range cases {
		if got := LikePrefix(c.in); got != c.want {
			t.Errorf("%s: LikePrefix(%q) = %s, want %s", c.why, c.in, got, c.want)
		}
	}
}
