package cdc

import (
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/internal/sqlflavor"
	"github.com/readside/readside/internal/sqlflavor/recorded"
)

// TestRecordedServers runs the tailer's own source code (newSourceDB,
// currentPosition, binlogFiles, replicaHosts, checkNotPurged,
// retentionSeconds, checkSettings) against the recorded answers of each
// supported release: positions, binlogs and replicas parse right, and no
// statement the release removed is ever sent (on MySQL 8.4 and 9 a
// removed statement answers ER_PARSE_ERROR forever).
func TestRecordedServers(t *testing.T) {
	servers, err := recorded.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) < 6 {
		t.Fatalf("%d recordings, want MySQL 5.7, 8.0.21, 8.0, 8.4, 9 and MariaDB 10.11", len(servers))
	}
	for _, rs := range servers {
		t.Run(rs.Name, func(t *testing.T) {
			ctx := t.Context()
			db, log := recorded.Open(rs)
			defer db.Close()
			src, err := newSourceDB(ctx, db, "")
			if err != nil {
				t.Fatalf("newSourceDB: %v", err)
			}
			if src.flavor != rs.Expect.Flavor {
				t.Errorf("flavor %q, want %q", src.flavor, rs.Expect.Flavor)
			}
			pos, err := src.currentPosition(ctx)
			if err != nil {
				t.Fatalf("currentPosition: %v", err)
			}
			if pos.File != rs.Expect.File || pos.Pos != rs.Expect.Pos || pos.GTID != rs.Expect.GTID {
				t.Errorf("position %s:%d gtid %q, want %s:%d gtid %q", pos.File, pos.Pos, pos.GTID, rs.Expect.File, rs.Expect.Pos, rs.Expect.GTID)
			}
			files, err := src.binlogFiles(ctx)
			if err != nil {
				t.Fatalf("binlogFiles: %v", err)
			}
			if !slices.Equal(files, rs.Expect.Binlogs) {
				t.Errorf("binlogs %v, want %v", files, rs.Expect.Binlogs)
			}
			hosts, err := src.replicaHosts(ctx)
			if err != nil {
				t.Fatalf("replicaHosts: %v", err)
			}
			var got []recorded.Replica
			for _, h := range hosts {
				got = append(got, recorded.Replica{ServerID: h.ServerID, Host: h.Host, Port: h.Port})
			}
			if !slices.Equal(got, rs.Expect.Replicas) {
				t.Errorf("replicas %+v, want %+v", got, rs.Expect.Replicas)
			}
			// The checkpoint at the current position is not purged.
			if err := src.checkNotPurged(ctx, pos); err != nil {
				t.Errorf("checkNotPurged(%s): %v", pos, err)
			}
			if _, err := src.retentionSeconds(ctx); err != nil {
				t.Errorf("retentionSeconds: %v", err)
			}
			if err := src.checkSettings(ctx); err != nil {
				t.Errorf("checkSettings: %v", err)
			}
			v, name, err := src.variableAny(ctx, src.dialect.LogReplicaUpdates)
			if err != nil || v == "" {
				t.Errorf("log_replica_updates under %v: %q (%s) %v, want a value under one of the names", src.dialect.LogReplicaUpdates, v, name, err)
			}

			sent := log.Statements()
			for _, stmt := range sent {
				if slices.Contains(rs.Removed, stmt) {
					t.Errorf("sent %q, which %s removed (it answers ER_PARSE_ERROR)", stmt, rs.Version)
				}
			}
			for _, stmt := range src.dialect.Statements() {
				if a, ok := rs.Answers[stmt]; !ok || a.Error != nil {
					t.Errorf("dialect statement %q has no recorded answer on %s (or an error): the table names a statement the release lacks", stmt, rs.Version)
				}
			}
			if !slices.ContainsFunc(sent, func(s string) bool { return strings.HasPrefix(s, "SHOW") }) {
				t.Error("no SHOW statement was sent: the test no longer reaches the server")
			}
		})
	}
}

// TestRecordedServersRefuseRemoved is the premise of the test above: a
// recording answers its removed statements with the server's parse error,
// so a tailer that sent one would fail, as it would on the real server.
func TestRecordedServersRefuseRemoved(t *testing.T) {
	for _, name := range []string{"mysql-8.4", "mysql-9"} {
		rs, err := recorded.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := recorded.Open(rs)
		for _, stmt := range []string{"SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS"} {
			_, err := sqlflavor.Query(t.Context(), db, stmt)
			if err == nil || !strings.Contains(err.Error(), "1064") {
				t.Errorf("%s: %s answered %v, want ER_PARSE_ERROR 1064", name, stmt, err)
			}
		}
		db.Close()
	}
}

// TestRecordedReplicaUpdates: `check` on a source that is a replica reads
// log_replica_updates under the name its release has and says it is an
// error when it is off (the replicated changes never reach its binlog).
func TestRecordedReplicaUpdates(t *testing.T) {
	for _, c := range []struct {
		why, server, set, want string
	}{
		{"MySQL 8.4 replica with the new name ON", "mysql-8.4", "", "ok"},
		{"MySQL 8.4 replica with it OFF", "mysql-8.4", "0", "error"},
		{"MySQL 8.0.21 has only log_slave_updates: read under the old name", "mysql-8.0.21", "0", "error"},
		{"MariaDB 10.11 primary (no replica status row): nothing to say", "mariadb-10.11", "0", ""},
	} {
		rs, err := recorded.Load(c.server)
		if err != nil {
			t.Fatal(err)
		}
		if c.set != "" {
			for _, n := range []string{"log_replica_updates", "log_slave_updates"} {
				if _, ok := rs.Variables[n]; ok {
					v := c.set
					rs.Variables[n] = &v
				}
			}
		}
		db, _ := recorded.Open(rs)
		src, err := newSourceDB(t.Context(), db, "")
		if err != nil {
			t.Fatal(err)
		}
		got := src.checkReplicaUpdates(t.Context())
		db.Close()
		sev := ""
		if len(got) > 0 {
			sev = got[0].Severity
		}
		if sev != c.want {
			t.Errorf("%s: findings %+v, want severity %q", c.why, got, c.want)
		}
		if c.want == "error" && !strings.Contains(got[0].Fix, src.dialect.LogReplicaUpdates[0]) {
			t.Errorf("%s: fix %q does not name %s", c.why, got[0].Fix, src.dialect.LogReplicaUpdates[0])
		}
	}
}

// TestRecordedBinlogOptions: `check` (checkBinlogSettings) and the
// tailer's start (checkSettings) on each MySQL release readside supports
// (and MariaDB 10.11 for binlog_row_image),
// through its recorded answers with one global setting changed: an image
// that is not the whole row (binlog_row_image MINIMAL or NOBLOB) and JSON
// diffs (binlog_row_value_options=PARTIAL_JSON) are errors naming the
// setting and its fix; compressed transactions (decoded) are no problem.
func TestRecordedBinlogOptions(t *testing.T) {
	cases := []struct {
		why, variable, value string
		since                [3]int // the first release that has the value
		want                 string // "error", or "" for no problem
		names, fix           string
	}{
		{"the recording as is: nothing to refuse", "", "", [3]int{5, 7, 0}, "", "", ""},
		{"MINIMAL images hold the key and the changed columns only", "binlog_row_image", "MINIMAL", [3]int{5, 7, 0}, "error", "binlog_row_image is MINIMAL, readside needs FULL", "SET GLOBAL binlog_row_image=FULL"},
		{"NOBLOB images leave out unchanged BLOB/TEXT/JSON columns", "binlog_row_image", "NOBLOB", [3]int{5, 7, 0}, "error", "binlog_row_image is NOBLOB, readside needs FULL", "SET GLOBAL binlog_row_image=FULL"},
		{"PARTIAL_JSON logs JSON updates as diffs", "binlog_row_value_options", "PARTIAL_JSON", [3]int{8, 0, 3}, "error", "binlog_row_value_options is PARTIAL_JSON", "SET GLOBAL binlog_row_value_options=''"},
		{"compressed transactions are decoded", "binlog_transaction_compression", "ON", [3]int{8, 0, 20}, "", "binlog_transaction_compression is ON: compressed transactions (TRANSACTION_PAYLOAD events) are decoded", ""},
	}
	servers, err := recorded.All()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, server := range servers {
		for _, c := range cases {
			rs, err := recorded.Load(server.Name) // a fresh copy to change
			if err != nil {
				t.Fatal(err)
			}
			if c.variable != "" {
				v := c.value
				rs.Variables[c.variable] = &v
			}
			db, _ := recorded.Open(rs)
			src, err := newSourceDB(t.Context(), db, "")
			if err != nil {
				t.Fatal(err)
			}
			// MariaDB has binlog_row_image (and the recording as is), not the others.
			onMariaDB := c.variable == "" || c.variable == "binlog_row_image"
			if (src.flavor == "mysql" && !src.dialect.Server.AtLeast(c.since[0], c.since[1], c.since[2])) || (src.flavor != "mysql" && !onMariaDB) {
				db.Close()
				continue
			}
			ran++
			findings := src.checkBinlogSettings(t.Context())
			startErr := src.checkSettings(t.Context())
			db.Close()
			var problems []Finding
			found := c.names == ""
			for _, f := range findings {
				if f.Severity == "error" {
					problems = append(problems, f)
				}
				if c.names != "" && strings.Contains(f.What, c.names) {
					found = true
				}
			}
			switch {
			case c.want == "" && (len(problems) > 0 || startErr != nil):
				t.Errorf("%s, %s: problems %+v, start: %v; want none", rs.Name, c.why, problems, startErr)
			case c.want == "error" && (len(problems) != 1 || !strings.Contains(problems[0].Fix, c.fix)):
				t.Errorf("%s, %s: problems %+v, want one naming the fix %q", rs.Name, c.why, problems, c.fix)
			case c.want == "error" && (startErr == nil || !strings.Contains(startErr.Error(), c.value) || !strings.Contains(startErr.Error(), c.fix)):
				t.Errorf("%s, %s: the tailer's start check says %v, want the setting and %q", rs.Name, c.why, startErr, c.fix)
			}
			if !found {
				t.Errorf("%s, %s: no finding says %q: %+v", rs.Name, c.why, c.names, findings)
			}
		}
	}
	if ran < 23 {
		t.Errorf("%d release/setting pairs checked, want the 5 MySQL recordings under each case their release has and MariaDB under binlog_row_image", ran)
	}
}
