package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
)

// TestCompose checks compose.yaml against what it wires together: the
// source settings readside requires, the Dockerfile it builds, the config
// it mounts (loaded with readside's own loader and the service's
// environment), and the init SQL's users, passwords, tables and columns.
func TestCompose(t *testing.T) {
	c := yamlDoc(t, "compose.yaml")
	for _, svc := range []string{"mysql", "redpanda", "readside"} {
		if at(c, "services", svc) == nil {
			t.Fatalf("compose.yaml has no %s service", svc)
		}
	}
	if img := str(c, "services", "mysql", "image"); img != "mysql:8.4" {
		t.Errorf("mysql image %q, want mysql:8.4", img)
	}
	var flags []string
	for _, f := range list(c, "services", "mysql", "command") {
		flags = append(flags, f.(string))
	}
	for _, want := range []string{"--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL", "--gtid-mode=ON", "--enforce-gtid-consistency=ON"} {
		if !slices.Contains(flags, want) {
			t.Errorf("mysql command lacks %s (docs/operations.md, Source requirements)", want)
		}
	}

	rs := at(c, "services", "readside")
	ctx, dockerfile := str(rs, "build", "context"), str(rs, "build", "dockerfile")
	if _, err := os.Stat(filepath.Join(ctx, dockerfile)); err != nil {
		t.Errorf("readside build: context %q + dockerfile %q: %v", ctx, dockerfile, err)
	}
	if at(rs, "read_only") != true {
		t.Error("readside: want read_only: true, as in Kubernetes")
	}
	var cfgHost string
	for _, v := range list(rs, "volumes") {
		host, target, _ := strings.Cut(strings.TrimSuffix(v.(string), ":ro"), ":")
		if target == configPath {
			cfgHost = host
		}
	}
	if cfgHost == "" {
		t.Fatalf("readside mounts nothing at %s, the image's default -c", configPath)
	}
	// Bind-mount sources of every service exist (named volumes do not start with '.').
	for name, svc := range at(c, "services").(map[string]any) {
		for _, v := range list(svc, "volumes") {
			if host, _, _ := strings.Cut(v.(string), ":"); strings.HasPrefix(host, ".") {
				if _, err := os.Stat(host); err != nil {
					t.Errorf("service %s mounts %s: %v", name, host, err)
				}
			}
		}
	}

	var environ []string
	for k, v := range at(rs, "environment").(map[string]any) {
		environ = append(environ, k+"="+v.(string))
	}
	cfg, err := config.Load(cfgHost, environ)
	if err != nil {
		t.Fatalf("%s does not load with the readside service's environment: %v", cfgHost, err)
	}
	checkSampleProjections(t, cfgHost, cfg)

	// The brokers are Redpanda's advertised address for containers.
	var advertised string
	for _, a := range list(c, "services", "redpanda", "command") {
		if s, ok := strings.CutPrefix(a.(string), "--advertise-kafka-addr "); ok {
			advertised = s
		}
	}
	for _, b := range cfg.Kafka.Brokers {
		if !strings.Contains(advertised, "://"+b) {
			t.Errorf("kafka.brokers %s is not an address Redpanda advertises (%s)", b, advertised)
		}
	}

	sql, err := os.ReadFile("mysql-init/01-schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	checkUser(t, string(sql), "source.dsn", cfg.Source.DSN.Reveal())
	checkUser(t, string(sql), "sinks.reads.dsn", cfg.Sinks["reads"].DSN.Reveal())
	checkSchema(t, string(sql), cfg)
}

// checkUser: the DSN's user is created by the init SQL with the DSN's
// password, and the DSN's host is the mysql service.
func checkUser(t *testing.T, sql, key, dsn string) {
	t.Helper()
	d, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	m := regexp.MustCompile(`CREATE USER '` + regexp.QuoteMeta(d.User) + `'@'%' IDENTIFIED BY '([^']*)'`).FindStringSubmatch(sql)
	if m == nil {
		t.Errorf("%s: the init SQL creates no user %q", key, d.User)
	} else if m[1] != d.Passwd {
		t.Errorf("%s: password differs from the init SQL's for user %q", key, d.User)
	}
	if d.Addr != "mysql:3306" {
		t.Errorf("%s: address %s, want the mysql service (mysql:3306)", key, d.Addr)
	}
}

var (
	createTable = regexp.MustCompile(`(?s)CREATE TABLE (\w+)\.(\w+) \((.*?)\n\)`)
	columnLine  = regexp.MustCompile(`^\s*(\w+)\s`)
)

// checkSchema: every captured table is created by the init SQL with every
// column the projections read.
func checkSchema(t *testing.T, sql string, cfg config.Config) {
	t.Helper()
	cols := map[string][]string{}
	for _, m := range createTable.FindAllStringSubmatch(sql, -1) {
		for _, line := range strings.Split(m[3], "\n") {
			c := columnLine.FindStringSubmatch(line)
			if c == nil || slices.Contains([]string{"KEY", "PRIMARY", "UNIQUE", "INDEX", "CONSTRAINT"}, strings.ToUpper(c[1])) {
				continue
			}
			cols[m[1]+"."+m[2]] = append(cols[m[1]+"."+m[2]], c[1])
		}
	}
	for _, tbl := range cfg.Source.Tables {
		if cols[tbl] == nil {
			t.Errorf("source.tables lists %s; the init SQL does not create it", tbl)
		}
	}
	for _, ex := range cfg.Source.ExcludeColumns {
		i := strings.LastIndex(ex, ".")
		if !slices.Contains(cols[ex[:i]], ex[i+1:]) {
			t.Errorf("source.exclude_columns %s: no such column in the init SQL", ex)
		}
	}
	need := func(what, table, col string) {
		if !slices.Contains(cols[table], col) {
			t.Errorf("%s reads %s.%s; the init SQL's table has columns %v", what, table, col, cols[table])
		}
	}
	for name, p := range cfg.Projections {
		for _, src := range p.Columns {
			need("projections."+name+".columns", p.From, src)
		}
		for _, j := range p.Join {
			for parent, child := range j.On {
				need("projections."+name+".join.on", j.From, parent)
				need("projections."+name+".join.on", p.From, child)
			}
			for _, src := range j.Columns {
				need("projections."+name+".join.columns", j.From, src)
			}
		}
	}
}
