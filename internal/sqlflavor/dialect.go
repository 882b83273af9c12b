package sqlflavor

// Dialect is every statement, result column, variable and privilege name
// that differs between the source server releases readside supports.
// Fields are filled for every server; a name list reads the first name the
// server knows (new name first, the name before the rename after it).
type Dialect struct {
	Server Server

	// BinlogStatus returns the current binlog file and position (and, on
	// MySQL, Executed_Gtid_Set): SHOW BINARY LOG STATUS on MySQL >= 8.2
	// (SHOW MASTER STATUS is gone in 8.4), SHOW BINLOG STATUS on MariaDB
	// >= 10.5.2, SHOW MASTER STATUS before.
	BinlogStatus string
	// BinaryLogs lists the binlog files, oldest first (Log_name first).
	BinaryLogs string
	// ReplicaHosts lists the replicas registered with the server:
	// SHOW REPLICAS on MySQL >= 8.0.22, SHOW REPLICA HOSTS on MariaDB >=
	// 10.5.1, SHOW SLAVE HOSTS before.
	ReplicaHosts string
	// ReplicaStatus is the server's own replication status when it is a
	// replica (no row when it is not): SHOW REPLICA STATUS on MySQL >=
	// 8.0.22 and MariaDB >= 10.5.1, SHOW SLAVE STATUS before.
	ReplicaStatus string
	// SecondsBehind is ReplicaStatus's lag column: Seconds_Behind_Source
	// in MySQL's SHOW REPLICA STATUS, Seconds_Behind_Master elsewhere.
	SecondsBehind string

	// GTIDExecuted is the variable holding every GTID in the binlog:
	// gtid_executed on MySQL, gtid_binlog_pos on MariaDB (not
	// gtid_current_pos: after a replica without log_slave_updates is
	// promoted, only gtid_binlog_pos matches its binlog, PeerDB#4523).
	GTIDExecuted string
	// GTIDPurged is MySQL's gtid_purged; "" on MariaDB, whose purged
	// GTIDs are the Gtid_list event opening the oldest binlog.
	GTIDPurged string
	// GTIDMode is the variable that says GTIDs are enforced: gtid_mode
	// (MySQL, "ON") or gtid_strict_mode (MariaDB, always has GTIDs).
	GTIDMode string
	// LogReplicaUpdates: whether a replica writes what it applies to its
	// own binlog (renamed log_replica_updates in MySQL 8.0.26; MariaDB
	// releases differ, so both names are read there).
	LogReplicaUpdates []string
	// BinlogRetention are the retention variables, seconds first;
	// expire_logs_days (days) is gone from MySQL 8.2.
	BinlogRetention []string

	// BinlogMonitorPrivilege lets a user run BinlogStatus and BinaryLogs:
	// BINLOG MONITOR on MariaDB >= 10.5.2, REPLICATION CLIENT elsewhere.
	BinlogMonitorPrivilege string
	// ReplicaHostsPrivilege lets a user run ReplicaHosts: REPLICATION
	// MASTER ADMIN on MariaDB >= 10.5.2, REPLICATION SLAVE elsewhere.
	ReplicaHostsPrivilege string
	// ReplicaStatusPrivilege lets a user run ReplicaStatus: REPLICA
	// MONITOR on MariaDB >= 10.5.9, REPLICATION SLAVE ADMIN on 10.5.2 to
	// 10.5.8, REPLICATION CLIENT elsewhere.
	ReplicaStatusPrivilege string
	// ReplicationSlavePrivilege lets a user read the binlog stream (its
	// name is unchanged in every release readside supports).
	ReplicationSlavePrivilege string
}

// For returns the dialect of a server.
func For(s Server) Dialect {
	d := Dialect{
		Server:                    s,
		BinaryLogs:                "SHOW BINARY LOGS",
		ReplicationSlavePrivilege: "REPLICATION SLAVE",
		BinlogRetention:           []string{"binlog_expire_logs_seconds", "expire_logs_days"},
	}
	if s.Flavor == MariaDB {
		d.BinlogStatus, d.ReplicaHosts, d.ReplicaStatus = "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS"
		if s.AtLeast(10, 5, 1) {
			d.ReplicaHosts, d.ReplicaStatus = "SHOW REPLICA HOSTS", "SHOW REPLICA STATUS"
		}
		d.SecondsBehind = "Seconds_Behind_Master"
		d.GTIDExecuted, d.GTIDPurged, d.GTIDMode = "gtid_binlog_pos", "", "gtid_strict_mode"
		// Read under both names: the new one where the release has it.
		d.LogReplicaUpdates = []string{"log_replica_updates", "log_slave_updates"}
		d.BinlogMonitorPrivilege, d.ReplicaHostsPrivilege, d.ReplicaStatusPrivilege = "REPLICATION CLIENT", "REPLICATION SLAVE", "REPLICATION CLIENT"
		if s.AtLeast(10, 5, 2) {
			d.BinlogStatus = "SHOW BINLOG STATUS"
			d.BinlogMonitorPrivilege, d.ReplicaHostsPrivilege, d.ReplicaStatusPrivilege = "BINLOG MONITOR", "REPLICATION MASTER ADMIN", "REPLICATION SLAVE ADMIN"
		}
		if s.AtLeast(10, 5, 9) {
			d.ReplicaStatusPrivilege = "REPLICA MONITOR"
		}
		return d
	}
	d.BinlogStatus, d.ReplicaHosts, d.ReplicaStatus, d.SecondsBehind = "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "SHOW SLAVE STATUS", "Seconds_Behind_Master"
	if s.AtLeast(8, 0, 22) {
		d.ReplicaHosts, d.ReplicaStatus, d.SecondsBehind = "SHOW REPLICAS", "SHOW REPLICA STATUS", "Seconds_Behind_Source"
	}
	if s.AtLeast(8, 2, 0) {
		d.BinlogStatus = "SHOW BINARY LOG STATUS"
	}
	d.GTIDExecuted, d.GTIDPurged, d.GTIDMode = "gtid_executed", "gtid_purged", "gtid_mode"
	d.LogReplicaUpdates = []string{"log_slave_updates"}
	if s.AtLeast(8, 0, 26) {
		d.LogReplicaUpdates = []string{"log_replica_updates", "log_slave_updates"}
	}
	d.BinlogMonitorPrivilege, d.ReplicaHostsPrivilege, d.ReplicaStatusPrivilege = "REPLICATION CLIENT", "REPLICATION SLAVE", "REPLICATION CLIENT"
	return d
}

// Statements are every statement of d, for tests that check none of a
// server's removed statements is among them.
func (d Dialect) Statements() []string {
	return []string{d.BinlogStatus, d.BinaryLogs, d.ReplicaHosts, d.ReplicaStatus}
}
