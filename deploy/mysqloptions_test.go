package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// mysqlRemoved are mysqld options MySQL 8.4 no longer has: the server
// refuses to start with them (MySQL Server Version Reference, option and
// variable changes for 8.2, 8.3 and 8.4), with what replaces each.
var mysqlRemoved = map[string]string{
	"master-info-repository":                 "nothing: the connection metadata is always a table (removed in 8.3)",
	"relay-log-info-repository":              "nothing: the applier metadata is always a table (removed in 8.3)",
	"expire-logs-days":                       "--binlog-expire-logs-seconds (removed in 8.2)",
	"abort-slave-event-count":                "nothing (removed in 8.2)",
	"disconnect-slave-event-count":           "nothing (removed in 8.2)",
	"character-set-client-handshake":         "nothing (removed in 8.3)",
	"default-authentication-plugin":          "--authentication-policy (removed in 8.4)",
	"binlog-transaction-dependency-tracking": "nothing: WRITESET is built in (removed in 8.4)",
	"avoid-temporal-upgrade":                 "nothing (removed in 8.4)",
	"admin-ssl":                              "--tls-version / admin TLS settings (removed in 8.4)",
}

// mysqlRenamed are options MySQL renamed in 8.0.26 (replica/source
// terminology): the old names are deprecated and warn at start.
var mysqlRenamed = map[string]string{
	"log-slave-updates":           "log-replica-updates",
	"skip-slave-start":            "skip-replica-start",
	"slave-parallel-workers":      "replica-parallel-workers",
	"slave-parallel-type":         "replica-parallel-type",
	"slave-preserve-commit-order": "replica-preserve-commit-order",
	"master-verify-checksum":      "source-verify-checksum",
	"log-slow-slave-statements":   "log-slow-replica-statements",
}

// mysqlOptionProblems returns what is wrong with a mysql:8.4 command line
// or my.cnf line list: removed options and pre-8.0.26 names.
func mysqlOptionProblems(flags []string) []string {
	var out []string
	for _, f := range flags {
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(f), "--"), "=")
		name = strings.ReplaceAll(strings.ToLower(name), "_", "-")
		if fix, ok := mysqlRemoved[name]; ok {
			out = append(out, f+": removed from MySQL 8.4, which refuses to start with it; use "+fix)
		}
		if repl, ok := mysqlRenamed[name]; ok {
			out = append(out, f+": renamed --"+repl+" in MySQL 8.0.26; use the new name")
		}
	}
	return out
}

func TestMySQLOptionProblems(t *testing.T) {
	for _, c := range []struct {
		why   string
		flag  string
		wants string // "" : no problem
	}{
		{"a removed option is named with its replacement", "--master-info-repository=TABLE", "removed from MySQL 8.4"},
		{"my.cnf spelling with underscores is the same option", "expire_logs_days=7", "--binlog-expire-logs-seconds"},
		{"the old replica terminology is named with the new name", "--log-slave-updates", "--log-replica-updates"},
		{"the new name is fine", "--log-replica-updates=ON", ""},
		{"readside's own requirements are fine", "--binlog-row-metadata=FULL", ""},
	} {
		got := strings.Join(mysqlOptionProblems([]string{c.flag}), "; ")
		if (c.wants == "") != (got == "") || !strings.Contains(got, c.wants) {
			t.Errorf("%s: %q -> %q, want %q", c.why, c.flag, got, c.wants)
		}
	}
}

// TestComposeMySQL84 checks both compose files' mysql:8.4 servers: no
// option 8.4 removed or renamed, the settings readside needs, and init
// SQL that 8.4 accepts (mysql_native_password is off by default in 8.4
// and gone in 9; grants use the names 8.4 has).
func TestComposeMySQL84(t *testing.T) {
	for _, path := range []string{"compose.yaml", "../e2e/compose.yaml"} {
		c := yamlDoc(t, path)
		if img := str(c, "services", "mysql", "image"); img != "mysql:8.4" {
			t.Errorf("%s: mysql image %q, want mysql:8.4 (the LTS the docs name)", path, img)
		}
		var flags []string
		for _, f := range list(c, "services", "mysql", "command") {
			flags = append(flags, f.(string))
		}
		for _, p := range mysqlOptionProblems(flags) {
			t.Errorf("%s: %s", path, p)
		}
		for _, want := range []string{"--log-bin=", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL", "--gtid-mode=ON", "--enforce-gtid-consistency=ON"} {
			found := false
			for _, f := range flags {
				found = found || strings.HasPrefix(f, want)
			}
			if !found {
				t.Errorf("%s: mysql command lacks %s (docs/operations.md, Source requirements)", path, want)
			}
		}
	}
	sql, err := os.ReadFile("mysql-init/01-schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?i)mysql_native_password`).Match(sql) {
		t.Error("mysql-init: mysql_native_password is disabled in MySQL 8.4 and removed in 9: create users with the default (caching_sha2_password)")
	}
	grant := regexp.MustCompile(`(?i)GRANT ([^;]+) ON \*\.\* TO 'repl'`).FindSubmatch(sql)
	if grant == nil {
		t.Fatal("mysql-init: no global GRANT to 'repl'")
	}
	privs := strings.ToUpper(string(grant[1]))
	for _, want := range []string{"REPLICATION SLAVE", "REPLICATION CLIENT"} {
		if !strings.Contains(privs, want) {
			t.Errorf("mysql-init: 'repl' lacks %s on MySQL (the binlog stream; SHOW BINARY LOG STATUS and SHOW BINARY LOGS)", want)
		}
	}
	if strings.Contains(privs, "BINLOG MONITOR") {
		t.Error("mysql-init: BINLOG MONITOR is MariaDB's name; MySQL 8.4 has REPLICATION CLIENT")
	}
}
