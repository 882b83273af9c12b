package verify

import (
	"database/sql"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestKeyLiteralsFindTheirRows: the text literal a repair's snapshot
// request names keys with finds the row in a key column of any character
// set — Unicode ones the server will not compare with a utf8mb4 value of
// the same rank (ucs2, utf16, utf16le, utf32: error 1267) and non-Unicode
// ones, by the column's index.
func TestKeyLiteralsFindTheirRows(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "keylit")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ charset, key string }{
		{"ucs2", "Ärger Ω"}, {"utf16", "Ärger 😀"}, {"utf16le", "Ärger 😀"}, {"utf32", "Ärger 😀"},
		{"utf8mb4", "Ärger 😀"}, {"latin1", "Ärger"}, {"sjis", "ソース"}, {"cp1251", "Жук"},
	} {
		tbl := "`" + db + "`.k_" + c.charset
		if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+tbl+" (k VARCHAR(20) CHARACTER SET "+c.charset+" PRIMARY KEY, n INT)",
			"INSERT INTO "+tbl+" VALUES ('other', 1), ("+literal(kText, c.key)+", 2)"); err != nil {
			t.Fatal(err)
		}
		where := "k = " + literal(kText, c.key)
		var n int
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT n FROM "+tbl+" WHERE "+where).Scan(&n); err != nil || n != 2 {
			t.Errorf("%s: WHERE %s found n %d (%v), want the row of n 2", c.charset, where, n, err)
			continue
		}
		var key sql.NullString
		if err := bed.MySQL.DB().QueryRowContext(ctx, "EXPLAIN SELECT n FROM "+tbl+" WHERE "+where).Scan(new(any), new(any), new(any), new(any), new(any), &key, new(any), new(any), new(any), new(any)); err != nil {
			t.Fatal(err)
		}
		if key.String != "PRIMARY" {
			t.Errorf("%s: WHERE %s does not use the primary key (EXPLAIN key %q)", c.charset, where, key.String)
		}
	}
}
