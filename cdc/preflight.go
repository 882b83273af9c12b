package cdc

// Source checks for `readside check`: everything the tailer needs of the
// source, reported all at once with the fix for each, through the same
// connection code (DSN, TLS) the tailer uses.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sqlflavor"
)

// Finding is one result of CheckSource.
type Finding struct {
	Severity string // "error" (readside cannot run correctly), "warning" or "ok"
	What     string
	Fix      string
}

// CheckSource checks the source's binlog settings, GTID mode, binlog
// retention against cfg.Check.ExpectedDowntime, the grants of the
// source.dsn user and the captured tables.
func CheckSource(ctx context.Context, cfg config.Config) []Finding {
	var out []Finding
	add := func(sev, fix, format string, args ...any) {
		out = append(out, Finding{Severity: sev, What: fmt.Sprintf(format, args...), Fix: fix})
	}
	for _, c := range event.TopicCollisions(cfg.Kafka.TopicPrefix, cfg.Source.Tables) {
		add("error", "rename one of the tables, or capture them from two readside deployments with different kafka.topic_prefix values", "%s", c)
	}
	if cfg.Kafka.Format.Debezium() {
		for _, c := range debezium.TopicCollisions(cfg.Kafka.TopicPrefix, cfg.Source.Tables) {
			add("error", "rename one of the tables, or capture them from two deployments with different kafka.topic_prefix values", "%s", c)
		}
		if cfg.Kafka.Debezium.Provide.Transaction.Metadata {
			if c := debezium.TransactionTopicCollision(cfg.Kafka.TransactionTopic(), cfg.Kafka.TopicPrefix, cfg.Source.Tables); c != "" {
				add("error", "set kafka.debezium.topic.transaction to a name no table's topic has (Debezium's default: transaction)", "%s", c)
			}
		}
	}
	src, err := openSource(ctx, cfg.Source.DSN.Reveal(), cfg.Source.Flavor, cfg.Source.TLS)
	if err != nil {
		add("error", "check the host, port, user and password in source.dsn, and source.tls", "%v", err)
		return out
	}
	defer src.Close()
	add("ok", "", "connected to the source at %s:%d (%s, %s, flavor %s)", src.host, src.port, src.dialect.Server, src.dialect.Server.Version, src.flavor)

	out = append(out, src.checkBinlogSettings(ctx)...)
	out = append(out, src.checkReplicaUpdates(ctx)...)
	if ret, err := src.retentionSeconds(ctx); err != nil {
		add("warning", "", "reading the binlog retention: %v", err)
	} else if want := cfg.Check.ExpectedDowntime; ret > 0 && time.Duration(ret)*time.Second < want {
		add("warning", fmt.Sprintf("SET GLOBAL binlog_expire_logs_seconds=%d; %s (or lower check.expected_downtime)", int64(want.Seconds()), mycnf),
			"source keeps binlogs for %s, less than check.expected_downtime %s: a readside outage that long loses its position and needs a re-snapshot", time.Duration(ret)*time.Second, want)
	} else if ret == 0 {
		add("ok", "", "binlogs are not purged by age (watch the source's disk)")
	} else {
		add("ok", "", "binlogs kept for %s (check.expected_downtime %s)", time.Duration(ret)*time.Second, want)
	}

	out = append(out, src.checkGrants(ctx, cfg)...)
	out = append(out, src.checkCascades(ctx, cfg)...)
	out = append(out, src.checkPartitions(ctx, cfg)...)

	missing, problems, err := src.checkTables(ctx, cfg.Source.Tables, cfg.Source.Keys)
	if err != nil {
		add("error", "", "reading the captured tables' keys: %v", err)
	}
	for _, p := range problems {
		add("error", p.fix, "%s", p.what)
	}
	for _, t := range missing {
		add("error", "create the table, fix the name, or remove it from source.tables", "captured table %s does not exist on the source", t)
	}
	if err == nil && len(problems) == 0 && len(missing) == 0 {
		add("ok", "", "all %d captured tables exist and have a primary key or a unique NOT NULL source.keys", len(cfg.Source.Tables))
	}
	out = append(out, src.checkCharsets(ctx, cfg)...)
	return out
}

// mycnf is the second half of every SET GLOBAL fix.
const mycnf = "and set it under [mysqld] in the server's my.cnf so a restart keeps it; sessions opened before SET GLOBAL keep the old value until they reconnect"

// checkBinlogSettings rates the source's binlog settings and GTID mode.
// Every setting that would make an event carry less than the whole row
// is an error here; the same settings changed later in one session make
// the tailer stop at that session's first event of a captured table
// (row_events.go), so no value is ever guessed.
func (s *sourceDB) checkBinlogSettings(ctx context.Context) []Finding {
	var out []Finding
	add := func(sev, fix, format string, args ...any) {
		out = append(out, Finding{Severity: sev, What: fmt.Sprintf(format, args...), Fix: fix})
	}
	settings := []struct{ name, want, fix, why string }{
		{"log_bin", "ON", "start the server with log_bin (log-bin=mysql-bin under [mysqld] in my.cnf) and restart it", ""},
		{"binlog_format", "ROW", "SET GLOBAL binlog_format=ROW; " + mycnf, ""},
		{"binlog_row_image", "FULL", "SET GLOBAL binlog_row_image=FULL; " + mycnf,
			": MINIMAL logs only the key before and the changed columns after, NOBLOB leaves out unchanged BLOB, TEXT and JSON columns; readside publishes whole rows and stops at the first such event of a captured table"},
		{"binlog_row_metadata", "FULL", "SET GLOBAL binlog_row_metadata=FULL; " + mycnf, ""},
	}
	for _, c := range settings {
		v, err := s.variable(ctx, c.name)
		switch {
		case err != nil:
			add("error", "", "reading @@%s: %v", c.name, err)
		case strings.EqualFold(v, c.want) || (c.name == "log_bin" && v == "1"):
			add("ok", "", "%s is %s", c.name, c.want)
		case c.name == "binlog_row_metadata":
			rateRowMetadata(add, v, c.fix)
		default:
			add("error", c.fix, "source %s is %s, readside needs %s%s", c.name, v, c.want, c.why)
		}
	}
	if s.flavor == "mysql" {
		switch v, err := s.variable(ctx, "binlog_row_value_options"); {
		case err != nil:
			add("error", "", "reading @@binlog_row_value_options: %v", err)
		case strings.Contains(strings.ToUpper(v), "PARTIAL_JSON"):
			add("error", "SET GLOBAL binlog_row_value_options=''; "+mycnf,
				"source binlog_row_value_options is PARTIAL_JSON: updates of JSON columns are logged as diffs (PARTIAL_UPDATE_ROWS_EVENT), readside needs whole JSON values and stops at the first such event of a captured table")
		}
		// Decoded (TRANSACTION_PAYLOAD_EVENT, zstd): worth saying, as other
		// binlog readers skip such transactions.
		if v, err := s.variable(ctx, "binlog_transaction_compression"); err == nil && (v == "1" || strings.EqualFold(v, "ON")) {
			add("ok", "", "binlog_transaction_compression is ON: compressed transactions (TRANSACTION_PAYLOAD events) are decoded")
		}
		if v, _ := s.variable(ctx, s.dialect.GTIDMode); !strings.EqualFold(v, "ON") {
			add("warning", "enable GTIDs (gtid_mode=ON and enforce_gtid_consistency=ON, in steps: see the MySQL manual, \"Enabling GTID Transactions Online\")", "source gtid_mode is %s: positions are file:offset and do not survive a failover to another server", v)
		} else {
			add("ok", "", "gtid_mode is ON")
		}
	} else {
		if v, _ := s.variable(ctx, s.dialect.GTIDMode); v != "1" && !strings.EqualFold(v, "ON") {
			add("warning", "SET GLOBAL gtid_strict_mode=ON; "+mycnf, "source gtid_strict_mode is off: an out-of-order GTID (e.g. after a botched failover) could make a resume position ambiguous")
		} else {
			add("ok", "", "gtid_strict_mode is ON")
		}
	}
	return out
}

// rateRowMetadata rates a binlog_row_metadata other than FULL (v is ""
// on servers without the setting). The tailer runs without FULL: it keeps
// a schema history and maps columns by position from it
// (schema_history.go), so this is a warning with its cost, not an error.
func rateRowMetadata(add func(sev, fix, format string, args ...any), v, fix string) {
	const cost = "the binlog does not name the columns, so readside keeps a schema history (topic <prefix>._readside_schema_history) and maps columns by position from it; " +
		"DDL its parser cannot follow stops the tailer, naming the fix (docs/operations.md, \"Schema history\"). FULL is recommended"
	if v == "" {
		add("warning", "upgrade the source to MariaDB >= 10.5 or MySQL >= 8.0.1 to get binlog_row_metadata=FULL",
			"source has no binlog_row_metadata setting (MySQL 5.7, MariaDB < 10.5): %s", cost)
		return
	}
	add("warning", fix, "source binlog_row_metadata is %s, not FULL: %s", v, cost)
}

// grant is one parsed line of SHOW GRANTS: privileges on an object.
type grant struct {
	privs      map[string]bool
	db, table  string // backquotes removed; db may hold LIKE wildcards
	role       string // a granted role (no privileges of its own here)
	allOnLevel bool   // ALL PRIVILEGES
}

var grantLine = regexp.MustCompile(`(?i)^GRANT (.+?) ON (\S+) TO `)
var roleLine = regexp.MustCompile("(?i)^GRANT (`[^`]+`(?:@`[^`]*`)?(?:,\\s*`[^`]+`(?:@`[^`]*`)?)*) TO ")

// parseGrant parses one SHOW GRANTS line; ok is false for lines it does
// not use (PROXY, routines).
func parseGrant(line string) (grant, bool) {
	if m := grantLine.FindStringSubmatch(line); m != nil {
		obj := m[2]
		if strings.HasPrefix(strings.ToUpper(obj), "FUNCTION") || strings.HasPrefix(strings.ToUpper(obj), "PROCEDURE") || strings.HasPrefix(strings.ToUpper(m[1]), "PROXY") {
			return grant{}, false
		}
		g := grant{privs: map[string]bool{}}
		depth, start := 0, 0
		list := m[1] + ","
		for i, c := range list {
			switch c {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 {
					p := strings.ToUpper(strings.TrimSpace(list[start:i]))
					start = i + 1
					if strings.Contains(p, "(") {
						continue // column privilege: not the whole table
					}
					g.privs[p] = true
				}
			}
		}
		g.allOnLevel = g.privs["ALL PRIVILEGES"] || g.privs["ALL"]
		g.db, g.table = splitObject(obj)
		return g, true
	}
	if m := roleLine.FindStringSubmatch(line); m != nil {
		return grant{role: m[1]}, true
	}
	return grant{}, false
}

// splitObject splits `db`.`table` (or *.*, `db`.*) at the dot outside
// backquotes and unquotes both parts.
func splitObject(obj string) (db, table string) {
	inQuote := false
	for i, c := range obj {
		switch {
		case c == '`':
			inQuote = !inQuote
		case c == '.' && !inQuote:
			return unquote(obj[:i]), unquote(obj[i+1:])
		}
	}
	return unquote(obj), ""
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return s
}

// dbMatches reports whether a grant's database pattern covers db: in
// grants, '_' and '%' are wildcards unless escaped with a backslash.
func dbMatches(pattern, db string) bool {
	if pattern == "*" {
		return true
	}
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			i++
			re.WriteString(regexp.QuoteMeta(string(pattern[i])))
		case c == '_':
			re.WriteString(".")
		case c == '%':
			re.WriteString(".*")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	ok, _ := regexp.MatchString(re.String(), db)
	return ok
}

// grants is the parsed SHOW GRANTS of one user.
type grants []grant

// has reports whether any grant gives one of privs on db.table (table ""
// means on the whole database, "*" db means global only).
func (gs grants) has(db, table string, privs ...string) bool {
	for _, g := range gs {
		if g.privs == nil {
			continue
		}
		covers := (g.db == "*" && g.table == "*") ||
			(db != "*" && dbMatches(g.db, db) && (g.table == "*" || (table != "" && g.table == table)))
		if !covers {
			continue
		}
		if g.allOnLevel {
			return true
		}
		for _, p := range privs {
			if g.privs[p] {
				return true
			}
		}
	}
	return false
}

func (gs grants) roles() []string {
	var out []string
	for _, g := range gs {
		if g.role != "" {
			out = append(out, g.role)
		}
	}
	return out
}

// checkGrants compares SHOW GRANTS of the connected user with what the
// tailer needs.
func (s *sourceDB) checkGrants(ctx context.Context, cfg config.Config) []Finding {
	var out []Finding
	var user string
	if err := s.db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil {
		return []Finding{{Severity: "error", What: fmt.Sprintf("reading CURRENT_USER(): %v", err)}}
	}
	name, host, _ := strings.Cut(user, "@")
	account := fmt.Sprintf("'%s'@'%s'", name, host)
	rows, err := s.db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return []Finding{{Severity: "error", What: fmt.Sprintf("SHOW GRANTS for %s: %v", account, err)}}
	}
	var gs grants
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return []Finding{{Severity: "error", What: fmt.Sprintf("reading SHOW GRANTS: %v", err)}}
		}
		if g, ok := parseGrant(line); ok {
			gs = append(gs, g)
		}
	}
	rows.Close()
	// Privileges that come through roles are not in SHOW GRANTS without
	// USING; with roles, a missing grant is only a warning.
	sev, roleNote := "error", ""
	if r := gs.roles(); len(r) > 0 {
		sev = "warning"
		roleNote = fmt.Sprintf(" (unless role %s grants it: SHOW GRANTS FOR %s USING ...)", strings.Join(r, ", "), account)
	}
	missing := func(fix, format string, args ...any) {
		out = append(out, Finding{Severity: sev, What: fmt.Sprintf(format, args...) + roleNote, Fix: fix})
	}
	before := len(out)
	if !gs.has("*", "*", "REPLICATION SLAVE", "REPLICATION REPLICA") {
		missing(fmt.Sprintf("GRANT REPLICATION SLAVE ON *.* TO %s;", account), "the source user %s lacks REPLICATION SLAVE: it cannot read the binlog", account)
	}
	if d := s.dialect; !gs.has("*", "*", "REPLICATION CLIENT", "BINLOG MONITOR") {
		missing(fmt.Sprintf("GRANT %s ON *.* TO %s;", d.BinlogMonitorPrivilege, account),
			"the source user %s lacks %s: it cannot read binlog positions (%s, %s)", account, d.BinlogMonitorPrivilege, d.BinlogStatus, d.BinaryLogs)
	}
	for _, t := range cfg.Source.Tables {
		db, tbl, _ := config.SplitTable(t)
		if !gs.has(db, tbl, "SELECT") {
			missing(fmt.Sprintf("GRANT SELECT ON %s.* TO %s; (or ON %s.%s)", quoteIdent(db), account, quoteIdent(db), quoteIdent(tbl)),
				"the source user %s lacks SELECT on %s: snapshots of it fail", account, t)
		}
	}
	sdb := cfg.Source.Snapshot.SignalDB
	var lacking []string
	for _, p := range []string{"CREATE", "INSERT", "UPDATE", "DELETE"} {
		if !gs.has(sdb, "", p) {
			lacking = append(lacking, p)
		}
	}
	if len(lacking) > 0 {
		f := Finding{Severity: sev, Fix: fmt.Sprintf("GRANT CREATE, INSERT, UPDATE, DELETE ON %s.* TO %s;", quoteIdent(sdb), account),
			What: fmt.Sprintf("the source user %s lacks %s on the signal database %s (source.snapshot.signal_db): snapshots cannot write their watermarks%s", account, strings.Join(lacking, ", "), sdb, roleNote)}
		if cfg.Source.Snapshot.Mode == config.SnapshotNever {
			f.Severity = "warning" // only on-demand snapshots need it
		}
		out = append(out, f)
	}
	if len(out) == before {
		out = append(out, Finding{Severity: "ok", What: fmt.Sprintf("the source user %s has the grants readside needs", account)})
	}
	return out
}

// checkReplicaUpdates: a source that is itself a replica writes what it
// applies from its primary to its own binlog only with
// log_replica_updates (log_slave_updates before MySQL 8.0.26); without
// it readside never sees those changes. Not knowing whether the source
// is a replica (the user may not read its replica status) is no finding.
func (s *sourceDB) checkReplicaUpdates(ctx context.Context) []Finding {
	d := s.dialect
	res, err := sqlflavor.Query(ctx, s.db, d.ReplicaStatus)
	if err != nil || len(res.Rows) == 0 {
		return nil
	}
	v, name, err := s.variableAny(ctx, d.LogReplicaUpdates)
	switch {
	case err != nil:
		return []Finding{{Severity: "warning", What: fmt.Sprintf("the source is a replica; reading @@%s: %v", d.LogReplicaUpdates[0], err)}}
	case v == "1" || strings.EqualFold(v, "ON"):
		return []Finding{{Severity: "ok", What: fmt.Sprintf("the source is a replica and writes what it replicates to its binlog (%s is ON)", name)}}
	default:
		return []Finding{{Severity: "error", Fix: fmt.Sprintf("set %s=ON under [mysqld] in the replica's my.cnf and restart it (it is not dynamic)", d.LogReplicaUpdates[0]),
			What: fmt.Sprintf("the source is a replica with %s=%s: changes it replicates from its primary never reach its binlog, so readside never sees them", name, v)}}
	}
}
