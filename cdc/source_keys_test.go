package cdc

import (
	"strings"
	"testing"
)

func TestCheckTableKeys(t *testing.T) {
	audit := tableKeyInfo{exists: true, columns: []string{"request_id", "seq", "note", "opt"},
		nullable: map[string]bool{"request_id": false, "seq": false, "note": true, "opt": true},
		unique:   []uniqueIndex{{name: "uq_req", cols: []string{"request_id", "seq"}, notNull: true}, {name: "uq_opt", cols: []string{"opt"}}}}
	nullableOnly := tableKeyInfo{exists: true, columns: []string{"a", "b"}, nullable: map[string]bool{"a": true, "b": false},
		unique: []uniqueIndex{{name: "ua", cols: []string{"a"}}}}
	bare := tableKeyInfo{exists: true, columns: []string{"a"}, nullable: map[string]bool{"a": false}}
	withPK := tableKeyInfo{exists: true, columns: []string{"id", "code"}, nullable: map[string]bool{"id": false, "code": false}, pk: []string{"id"},
		unique: []uniqueIndex{{name: "PRIMARY", cols: []string{"id"}, notNull: true}, {name: "uq_code", cols: []string{"code"}, notNull: true}}}
	cases := []struct {
		why  string
		ti   tableKeyInfo
		keys []string
		want []string // fragments of the one problem's text (what + fix); nil: no problem
	}{
		{"a primary key keys the table", withPK, nil, nil},
		{"no key at all: the unique NOT NULL index is named and the exact source.keys line offered", audit, nil,
			[]string{"legacy.audit_log has no primary key and no source.keys", "uq_req (request_id, seq; all NOT NULL)", "uq_opt (opt; nullable)", "source.keys: {legacy.audit_log: [request_id, seq]}", "ADD PRIMARY KEY"}},
		{"only a nullable unique index: the fix is NOT NULL first", nullableOnly, nil, []string{"ua (a; nullable)", "MODIFY … NOT NULL for a"}},
		{"no unique index at all", bare, nil, []string{"it has no unique index", "ADD PRIMARY KEY"}},
		{"the columns of the unique NOT NULL index", audit, []string{"request_id", "seq"}, nil},
		{"a superset of a unique index is unique too", audit, []string{"seq", "request_id", "note"}, []string{"note, which is nullable"}},
		{"a superset of NOT NULL columns containing the index", withPK, []string{"code", "id"}, nil},
		{"source.keys may override a primary key with other unique NOT NULL columns", withPK, []string{"code"}, nil},
		{"a nullable column is refused by name", audit, []string{"opt"}, []string{"source.keys.legacy.audit_log names column opt, which is nullable", "MODIFY `opt` … NOT NULL",
			"uq_req (request_id, seq; all NOT NULL)", "source.keys: {legacy.audit_log: [request_id, seq]}"}},
		{"a column a keyed-by-primary-key table lacks: dropping the entry is the fix", withPK, []string{"cod"},
			[]string{"names column cod, which legacy.audit_log does not have", "remove source.keys.legacy.audit_log: its primary key (id) keys it"}},
		{"a column the table lacks is named with the table's columns", audit, []string{"request"}, []string{"names column request, which legacy.audit_log does not have (columns request_id, seq, note, opt)", "source.keys: {legacy.audit_log: [request_id, seq]}"}},
		{"NOT NULL columns without a unique index could repeat", audit, []string{"seq"}, []string{"columns (seq) of legacy.audit_log contain no UNIQUE index", "ADD UNIQUE (`seq`)"}},
		{"column names compare as MySQL does, without case", audit, []string{"REQUEST_ID", "Seq"}, nil},
	}
	for _, c := range cases {
		got := checkTableKeys("legacy.audit_log", c.ti, c.keys)
		if c.want == nil {
			if len(got) > 0 {
				t.Errorf("%s: unexpected problems %v", c.why, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s: got %d problems %v, want 1", c.why, len(got), got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got[0].Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, got[0].Error(), w)
			}
		}
	}
}

func TestKeyGuard(t *testing.T) {
	keys := map[string][]string{"legacy.audit_log": {"request_id", "seq"}}
	start := []uniqueIndex{{name: "uq_req", cols: []string{"request_id", "seq"}}, {name: "uq_other", cols: []string{"note"}}}
	cases := []struct {
		why     string
		ddl     []string // run with default database legacy
		covered bool
		lost    string // fragment of the error's "after"
	}{
		{"nothing happened", nil, true, ""},
		{"ALTER … DROP INDEX of the covering index", []string{"ALTER TABLE audit_log DROP INDEX uq_req"}, false, "DROP INDEX uq_req"},
		{"DROP INDEX … ON, qualified", []string{"DROP INDEX uq_req ON legacy.audit_log"}, false, "DROP INDEX"},
		{"dropping another index changes nothing", []string{"ALTER TABLE audit_log DROP INDEX uq_other"}, true, ""},
		{"another table's index of the same name", []string{"ALTER TABLE other DROP INDEX uq_req"}, true, ""},
		{"dropped and added back in one statement", []string{"ALTER TABLE audit_log DROP INDEX uq_req, ADD UNIQUE KEY uq2 (seq, request_id)"}, true, ""},
		{"dropped, then a unique index on a subset added", []string{"ALTER TABLE audit_log DROP INDEX uq_req", "CREATE UNIQUE INDEX u_seq ON audit_log (seq)"}, true, ""},
		{"a non-unique index is no cover", []string{"ALTER TABLE audit_log DROP INDEX uq_req", "CREATE INDEX k ON audit_log (request_id, seq)"}, false, ""},
		{"a unique index beyond the key is no cover", []string{"ALTER TABLE audit_log DROP INDEX uq_req", "ALTER TABLE audit_log ADD UNIQUE (request_id, seq, note)"}, false, ""},
		{"a renamed index still covers and drops by its new name", []string{"ALTER TABLE audit_log RENAME INDEX uq_req TO uq_new", "ALTER TABLE audit_log DROP INDEX uq_new"}, false, "uq_new"},
		{"an index named by the server after its first column", []string{"ALTER TABLE audit_log DROP INDEX uq_req", "ALTER TABLE audit_log ADD UNIQUE (request_id, seq)", "ALTER TABLE audit_log DROP INDEX request_id"}, false, ""},
		{"renaming a key column takes the index off the key", []string{"ALTER TABLE audit_log RENAME COLUMN seq TO seq2"}, false, "RENAME COLUMN"},
		{"CHANGE COLUMN renames it too", []string{"ALTER TABLE audit_log CHANGE COLUMN seq seq2 INT NOT NULL"}, false, "CHANGE COLUMN"},
		{"renamed and back again still covers", []string{"ALTER TABLE audit_log RENAME COLUMN seq TO seq2", "ALTER TABLE audit_log RENAME COLUMN seq2 TO seq"}, true, ""},
		{"a primary key within the key columns covers", []string{"ALTER TABLE audit_log DROP INDEX uq_req, ADD PRIMARY KEY (request_id, seq)"}, true, ""},
		{"gh-ost's swap carries the ghost table's indexes", []string{"CREATE TABLE _audit_log_gho LIKE audit_log", "ALTER TABLE _audit_log_gho ADD COLUMN x INT",
			"RENAME TABLE audit_log TO _audit_log_del, _audit_log_gho TO audit_log"}, true, ""},
		{"a swapped-in table without the index", []string{"CREATE TABLE n (request_id INT NOT NULL, seq INT NOT NULL)", "RENAME TABLE audit_log TO o, n TO audit_log"}, false, "RENAME"},
		{"recreated with a UNIQUE column option set and constraint", []string{"DROP TABLE audit_log", "CREATE TABLE audit_log (request_id INT NOT NULL, seq INT NOT NULL, UNIQUE KEY (request_id, seq))"}, true, ""},
		{"recreated without it", []string{"DROP TABLE audit_log", "CREATE TABLE audit_log (request_id INT NOT NULL, seq INT NOT NULL)"}, false, ""},
		{"a DDL the parser cannot read that names the table", []string{"ALTER TABLE audit_log DROP INDEX uq_req WITH SYSTEM VERSIONING NONSENSE"}, false, "NONSENSE"},
		{"a DDL the parser cannot read on another table", []string{"ALTER TABLE other WITH NONSENSE"}, true, ""},
		{"a DDL in another database", []string{"DROP TABLE shop.audit_log"}, true, ""},
		{"a column added in a character set the parser does not know", []string{"ALTER TABLE audit_log ADD COLUMN extra VARCHAR(20) CHARACTER SET cp1251 NULL AFTER seq"}, true, ""},
		{"the same, then the covering index dropped", []string{"ALTER TABLE audit_log ADD COLUMN extra VARCHAR(20) CHARSET=sjis COLLATE sjis_japanese_ci NULL", "ALTER TABLE audit_log DROP INDEX uq_req"}, false, "DROP INDEX"},
		{"a column in a character set the parser does not know added with the index dropped", []string{"ALTER TABLE audit_log ADD COLUMN extra TEXT CHARACTER SET 'utf16', DROP INDEX uq_req"}, false, "DROP INDEX"},
		{"recreated in character sets the parser does not know", []string{"DROP TABLE audit_log", "CREATE TABLE audit_log (request_id INT NOT NULL, seq INT NOT NULL, note VARCHAR(9) CHARACTER SET koi8r COLLATE koi8r_bin, UNIQUE KEY (request_id, seq)) DEFAULT CHARSET=cp1251"}, true, ""},
		{"a MariaDB column type the parser does not know", []string{"ALTER TABLE audit_log ADD COLUMN u UUID NULL, ADD COLUMN ip INET6 NULL"}, true, ""},
		{"a MariaDB column type the parser does not know, with a DROP", []string{"ALTER TABLE audit_log ADD COLUMN u UUID NULL, DROP COLUMN seq"}, false, "UUID"},
		{"a MariaDB column type the parser does not know, with a CHANGE", []string{"ALTER ONLINE TABLE audit_log ADD COLUMN u UUID NULL, CHANGE seq seq2 INT NOT NULL"}, false, "UUID"},
	}
	for _, c := range cases {
		g := newKeyGuard(keys)
		g.indexes["legacy.audit_log"] = start
		for _, ddl := range c.ddl {
			g.apply("legacy", ddl)
		}
		err := g.check("legacy.audit_log")
		if c.covered != (err == nil) {
			t.Errorf("%s: covered = %v, want %v (err %v)", c.why, err == nil, c.covered, err)
			continue
		}
		if err != nil {
			for _, w := range []string{"legacy.audit_log", "request_id, seq", "ADD UNIQUE (`request_id`, `seq`)", c.lost} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %q lacks %q", c.why, err, w)
				}
			}
		}
		if err := g.check("legacy.other"); err != nil {
			t.Errorf("%s: a table without source.keys is never guarded: %v", c.why, err)
		}
	}
}

func TestWithParserCharsets(t *testing.T) {
	for in, want := range map[string]string{
		"ALTER TABLE t ADD c VARCHAR(2) CHARACTER SET cp1251 COLLATE cp1251_bin NULL":           "ALTER TABLE t ADD c VARCHAR(2) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL",
		"CREATE TABLE t (c TEXT charset 'sjis') DEFAULT CHARSET = koi8r":                        "CREATE TABLE t (c TEXT charset utf8mb4) DEFAULT CHARSET = utf8mb4",
		"ALTER TABLE t ADD c INT COMMENT 'CHARACTER SET cp1251', ADD `charset x` INT":           "ALTER TABLE t ADD c INT COMMENT 'CHARACTER SET cp1251', ADD `charset x` INT",
		"ALTER TABLE t ADD `set` INT, ADD d INT /* COLLATE x */, CONVERT TO CHARACTER SET ucs2": "ALTER TABLE t ADD `set` INT, ADD d INT /* COLLATE x */, CONVERT TO CHARACTER SET utf8mb4",
		"ALTER TABLE t ADD c CHAR(1) CHARACTER SET latin1 DEFAULT 'x\\' COLLATE ok'":            "ALTER TABLE t ADD c CHAR(1) CHARACTER SET utf8mb4 DEFAULT 'x\\' COLLATE ok'",
	} {
		if got := withParserCharsets(in); got != want {
			t.Errorf("withParserCharsets(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
