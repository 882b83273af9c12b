package sqlflavor

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		why, version, comment string
		want                  Server
		err                   string
	}{
		{"Debian's MariaDB names itself in VERSION()", "10.11.14-MariaDB-0+deb12u2-log", "Debian 12", Server{Flavor: MariaDB, Major: 10, Minor: 11, Patch: 14}, ""},
		{"MariaDB through a proxy that keeps the handshake's 5.5.5- prefix", "5.5.5-10.6.18-MariaDB", "", Server{Flavor: MariaDB, Major: 10, Minor: 6, Patch: 18}, ""},
		{"a MariaDB build whose VERSION() lacks the name still says it in the comment", "11.4.2", "mariadb.org binary distribution", Server{Flavor: MariaDB, Major: 11, Minor: 4, Patch: 2}, ""},
		{"MySQL 8.4 LTS", "8.4.3", "MySQL Community Server - GPL", Server{Flavor: MySQL, Major: 8, Minor: 4, Patch: 3}, ""},
		{"MySQL with a -log suffix", "8.0.36-log", "MySQL Community Server - GPL", Server{Flavor: MySQL, Major: 8, Minor: 0, Patch: 36}, ""},
		{"Percona Server is MySQL", "8.0.36-28", "Percona Server (GPL), Release 28, Revision 47601f19", Server{Flavor: MySQL, Major: 8, Minor: 0, Patch: 36}, ""},
		{"MySQL 9 innovation release", "9.1.0", "MySQL Community Server - GPL", Server{Flavor: MySQL, Major: 9, Minor: 1, Patch: 0}, ""},
		{"MySQL 5.7 is supported (schema history instead of FULL metadata)", "5.7.44-log", "MySQL Community Server (GPL)", Server{Flavor: MySQL, Major: 5, Minor: 7, Patch: 44}, ""},
		{"MySQL 5.6 has no FULL row images we rely on: refused with the upgrade", "5.6.51", "MySQL Community Server (GPL)", Server{}, "needs MySQL 5.7 or later"},
		{"MariaDB before GTIDs: refused with the upgrade", "10.0.1-MariaDB", "", Server{}, "needs MariaDB 10.0.2 or later"},
		{"an unreadable version is refused, not guessed", "unknown", "", Server{}, `VERSION() "unknown"`},
	} {
		got, err := Parse(c.version, c.comment)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: Parse(%q) error %v, want one containing %q", c.why, c.version, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Parse(%q): %v", c.why, c.version, err)
			continue
		}
		got.Version = ""
		if got != c.want {
			t.Errorf("%s: Parse(%q) = %+v, want %+v", c.why, c.version, got, c.want)
		}
	}
}

// TestDialect is the statement table per release: what readside sends to
// each, and the privilege it names when one is missing.
func TestDialect(t *testing.T) {
	mysqlOld := want{"SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS", "Seconds_Behind_Master",
		"gtid_executed", "gtid_purged", "gtid_mode", []string{"log_slave_updates"}, "REPLICATION CLIENT", "REPLICATION SLAVE", "REPLICATION CLIENT"}
	mysql8022 := mysqlOld
	mysql8022.replicaHosts, mysql8022.replicaStatus, mysql8022.secondsBehind = "SHOW REPLICAS", "SHOW REPLICA STATUS", "Seconds_Behind_Source"
	mysql8026 := mysql8022
	mysql8026.logReplicaUpdates = []string{"log_replica_updates", "log_slave_updates"}
	mysql82 := mysql8026
	mysql82.binlogStatus = "SHOW BINARY LOG STATUS"
	mariaOld := want{"SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS", "Seconds_Behind_Master",
		"gtid_binlog_pos", "", "gtid_strict_mode", []string{"log_replica_updates", "log_slave_updates"}, "REPLICATION CLIENT", "REPLICATION SLAVE", "REPLICATION CLIENT"}
	maria1055 := mariaOld
	maria1055.binlogStatus, maria1055.replicaHosts, maria1055.replicaStatus = "SHOW BINLOG STATUS", "SHOW REPLICA HOSTS", "SHOW REPLICA STATUS"
	maria1055.binlogMonitor, maria1055.replicaHostsPriv, maria1055.replicaStatusPriv = "BINLOG MONITOR", "REPLICATION MASTER ADMIN", "REPLICATION SLAVE ADMIN"
	maria10 := maria1055
	maria10.replicaStatusPriv = "REPLICA MONITOR"

	for _, c := range []struct {
		why     string
		version string
		want    want
	}{
		{"MySQL 5.7 knows only the old statements", "5.7.44", mysqlOld},
		{"MySQL 8.0.21 is the last release before SHOW REPLICAS", "8.0.21", mysqlOld},
		{"MySQL 8.0.22 added SHOW REPLICAS / SHOW REPLICA STATUS (new column names)", "8.0.22", mysql8022},
		{"MySQL 8.0.25 still has only log_slave_updates", "8.0.25", mysql8022},
		{"MySQL 8.0.26 renamed the variables: read log_replica_updates first", "8.0.26", mysql8026},
		{"MySQL 8.0.40: SHOW BINARY LOG STATUS does not exist in 8.0", "8.0.40", mysql8026},
		{"MySQL 8.2 added SHOW BINARY LOG STATUS", "8.2.0", mysql82},
		{"MySQL 8.4 LTS removed SHOW MASTER STATUS, SHOW SLAVE HOSTS/STATUS", "8.4.3", mysql82},
		{"MySQL 9.x like 8.4", "9.1.0", mysql82},
		{"MariaDB 10.4: before the 10.5 renames", "10.4.34-MariaDB", mariaOld},
		{"MariaDB 10.5.2 added SHOW BINLOG STATUS and BINLOG MONITOR", "10.5.2-MariaDB", maria1055},
		{"MariaDB 10.5.9 added REPLICA MONITOR for SHOW REPLICA STATUS", "10.5.9-MariaDB", maria10},
		{"MariaDB 10.11, the test bed's server", "10.11.14-MariaDB-0+deb12u2", maria10},
		{"MariaDB 11.x like 10.11", "11.4.5-MariaDB", maria10},
	} {
		s, err := Parse(c.version, "")
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		d := For(s)
		got := want{d.BinlogStatus, d.ReplicaHosts, d.ReplicaStatus, d.SecondsBehind, d.GTIDExecuted, d.GTIDPurged, d.GTIDMode,
			d.LogReplicaUpdates, d.BinlogMonitorPrivilege, d.ReplicaHostsPrivilege, d.ReplicaStatusPrivilege}
		if !slices.Equal(got.logReplicaUpdates, c.want.logReplicaUpdates) {
			t.Errorf("%s (%s): LogReplicaUpdates %v, want %v", c.why, c.version, got.logReplicaUpdates, c.want.logReplicaUpdates)
		}
		got.logReplicaUpdates, c.want.logReplicaUpdates = nil, nil
		if gs, ws := strings.Join(fields(got), "|"), strings.Join(fields(c.want), "|"); gs != ws {
			t.Errorf("%s (%s):\n got %s\nwant %s", c.why, c.version, gs, ws)
		}
		if d.BinaryLogs != "SHOW BINARY LOGS" {
			t.Errorf("%s: BinaryLogs %q: SHOW MASTER LOGS is gone from 8.4, SHOW BINARY LOGS works everywhere", c.why, d.BinaryLogs)
		}
	}
}

// want is a Dialect's fields in the order TestDialect prints them.
type want struct {
	binlogStatus, replicaHosts, replicaStatus, secondsBehind string
	gtidExecuted, gtidPurged, gtidMode                       string
	logReplicaUpdates                                        []string
	binlogMonitor, replicaHostsPriv, replicaStatusPriv       string
}

func fields(w want) []string {
	return []string{w.binlogStatus, w.replicaHosts, w.replicaStatus, w.secondsBehind, w.gtidExecuted, w.gtidPurged, w.gtidMode, w.binlogMonitor, w.replicaHostsPriv, w.replicaStatusPriv}
}
