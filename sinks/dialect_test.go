package sinks

import (
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// TestMySQL8Upsert: the MySQL 8 form names the new row by its alias
// wherever MariaDB reads VALUES(), and only in upserts.
func TestMySQL8Upsert(t *testing.T) {
	cfg := config.Default()
	cfg.Source.Tables = []string{"db.t"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"t": {From: "db.t", Sink: "reads", Key: []string{"id"}, Columns: map[string]string{"id": "id", "name": "name"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	maria, my := newStatements(ps[0], mariaDB), newStatements(ps[0], mysql8)
	for _, c := range []struct{ why, got, want string }{
		{"MariaDB upsert: VALUES()", maria.upsert.text(2), "INSERT INTO `t` (`id`, `name`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`), `name` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`name`), `name`), `_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))"},
		{"MySQL 8 upsert: the row alias", my.upsert.text(2), "INSERT INTO `t` (`id`, `name`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `name` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`name`, `name`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)"},
		{"MySQL 8 bookkeeping upsert: unquoted names too", my.offsets.text(1), "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, _rs_new.next_offset)"},
		{"statements without ON DUPLICATE KEY UPDATE: the same in both", my.deleteRows.text(1), maria.deleteRows.text(1)},
	} {
		if c.got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.why, c.got, c.want)
		}
	}
	for v, want := range map[string]bool{"10.11.19-MariaDB-0+deb12u1": false, "8.0.18": false, "8.0.19": true, "8.4.3": true, "9.1.0": true, "5.7.44-log": false, "8.0.36-28": true} {
		if usesRowAlias(v) != want {
			t.Errorf("usesRowAlias(%q) = %v", v, !want)
		}
	}
}

func TestInterpolationSafe(t *testing.T) {
	for dsn, want := range map[string]bool{
		"u:p@tcp(h:3306)/db":                                 true,
		"u:p@tcp(h:3306)/db?charset=utf8mb4":                 true,
		"u:p@tcp(h:3306)/db?charset=utf8mb4,utf8":            true,
		"u:p@tcp(h:3306)/db?charset=latin1":                  true,
		"u:p@tcp(h:3306)/db?collation=utf8mb4_unicode_ci":    true,
		"u:p@tcp(h:3306)/db?charset=gbk":                     false,
		"u:p@tcp(h:3306)/db?charset=utf8mb4,sjis":            false,
		"u:p@tcp(h:3306)/db?collation=big5_chinese_ci":       false,
		"u:p@tcp(h:3306)/db?collation=cp932_japanese_ci&x=1": false,
		"u:p@tcp(h:3306)/db?charset=gb18030&parseTime=true":  false,
	} {
		cfg, err := driver.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := interpolationSafe(cfg); got != want {
			t.Errorf("interpolationSafe(%s) = %v, want %v", dsn, got, want)
		}
	}
}

func TestSaysNoMultiStatements(t *testing.T) {
	for dsn, want := range map[string]bool{
		"u:p@tcp(h:3306)/db":                                          false,
		"u:p@tcp(h:3306)/db?multiStatements=true":                     false,
		"u:p@tcp(h:3306)/db?multiStatements=false":                    true,
		"u:p@tcp(h:3306)/db?parseTime=true&multiStatements=0":         true,
		"u:p@tcp(h:3306)/db?multiStatements=maybe":                    false,
		"u:p?/x@tcp(h:3306)/db":                                       false, // '?' and '/' in the password
		"u:p?multiStatements=false@tcp(h:3306)/db":                    false,
		"u:p?/x@tcp(h:3306)/db?charset=utf8mb4&multiStatements=false": true,
	} {
		if got := saysNoMultiStatements(dsn); got != want {
			t.Errorf("saysNoMultiStatements(%s) = %v, want %v", dsn, got, want)
		}
	}
}
