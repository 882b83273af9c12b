package cdc

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/internal/sqlflavor"
	"github.com/readside/readside/internal/sqlflavor/recorded"
)

// TestDialectLive runs the code path TestRecordedServers runs on recorded
// answers against the live MariaDB: the tailer's own connection (the
// least-privileged replication user) reads the position, binlogs and
// registered replicas with the statements its dialect names, and each of
// those statements answers with exactly the columns the MariaDB 10.11
// recording holds, so the recording cannot drift from the server.
func TestDialectLive(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := openSource(ctx, bed.MySQL.ReplDSN(), "", config.TLS{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	d := src.dialect
	if d.Server.Flavor != src.flavor {
		t.Errorf("dialect of %s, tailer flavor %s", d.Server, src.flavor)
	}

	if d.Server.Flavor == sqlflavor.MariaDB && d.Server.Major == 10 && d.Server.Minor == 11 {
		rec, err := recorded.Load("mariadb-10.11")
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range d.Statements() {
			live, err := sqlflavor.Query(ctx, bed.MySQL.DB(), stmt)
			if err != nil {
				t.Errorf("%s on the live server: %v", stmt, err)
				continue
			}
			if want := rec.Answers[stmt].Columns; !slices.Equal(live.Columns, want) {
				t.Errorf("%s: live columns %v, recorded %v: re-record internal/sqlflavor/recorded/testdata/mariadb-10.11.json", stmt, live.Columns, want)
			}
		}
		for _, stmt := range rec.Removed {
			if _, err := sqlflavor.Query(ctx, bed.MySQL.DB(), stmt); err == nil || !strings.Contains(err.Error(), "1064") {
				t.Errorf("%s: live answer %v, recorded ER_PARSE_ERROR 1064", stmt, err)
			}
		}
	} else {
		t.Logf("source is %s: column sets not compared with the MariaDB 10.11 recording", d.Server)
	}

	// Position: the tailer's reading equals the test bed's (retried: a
	// write in between moves both).
	var pos Position
	for try := 0; ; try++ {
		if pos, err = src.currentPosition(ctx); err != nil {
			t.Fatalf("currentPosition as the replication user: %v", err)
		}
		bp, err := bed.MySQL.CurrentPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pos.File == bp.File && pos.Pos == bp.Pos && pos.GTID == bp.GTID {
			break
		}
		if try == 20 {
			t.Fatalf("tailer position %s:%d %q, test bed %s:%d %q", pos.File, pos.Pos, pos.GTID, bp.File, bp.Pos, bp.GTID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pos.File == "" || pos.Pos == 0 || pos.GTID == "" {
		t.Errorf("position %s:%d %q: want a file, an offset and a GTID position", pos.File, pos.Pos, pos.GTID)
	}
	files, err := src.binlogFiles(ctx)
	if err != nil {
		t.Fatalf("binlogFiles as the replication user: %v", err)
	}
	if len(files) == 0 || files[len(files)-1] != pos.File {
		t.Errorf("binlogs %v: want the current file %s last", files, pos.File)
	}
	if err := src.checkNotPurged(ctx, pos); err != nil {
		t.Errorf("checkNotPurged(current position): %v", err)
	}

	// A write's GTID (what /wait takes) is in the position after it.
	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bed.MySQL.CreateDatabase(ctx, "dialect")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE TABLE `%s`.t (id INT PRIMARY KEY)", db)); err != nil {
		t.Fatal(err)
	}
	gtid, err := bed.MySQL.LastGTID(ctx, conn)
	conn.Close()
	if err != nil || gtid == "" {
		t.Fatalf("LastGTID: %q %v", gtid, err)
	}
	after, err := src.currentPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := after.Contains(Position{Flavor: src.flavor, GTID: gtid}); err != nil || !ok {
		t.Errorf("position after the write %q does not contain the write's GTID %q (%v)", after.GTID, gtid, err)
	}

	// testbed.Seq is the portable replacement of MariaDB's seq_1_to_N.
	var n, lo, hi, distinct int
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*), MIN(seq), MAX(seq), COUNT(DISTINCT seq) FROM "+testbed.Seq(12345)).Scan(&n, &lo, &hi, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 12345 || lo != 1 || hi != 12345 || distinct != 12345 {
		t.Errorf("Seq(12345): %d rows, %d..%d, %d distinct; want 12345 rows 1..12345", n, lo, hi, distinct)
	}

	// A registered binlog client shows in the dialect's replica list,
	// parsed by the tailer's server_id preflight code.
	id := testbed.NewServerID()
	host := fmt.Sprintf("readside:dialect-%d", id)
	user, password := bed.MySQL.ReplCredentials()
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: id, Flavor: src.flavor, Host: bed.MySQL.Host, Port: uint16(bed.MySQL.Port),
		User: user, Password: password, Localhost: host, Logger: testLogger(t)})
	defer syncer.Close()
	set, err := mysql.ParseGTIDSet(src.flavor, pos.GTID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syncer.StartSyncGTID(set); err != nil {
		t.Fatal(err)
	}
	admin, err := newSourceDB(ctx, bed.MySQL.DB(), "") // listing replicas needs REPLICATION MASTER ADMIN on MariaDB
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		hosts, err := admin.replicaHosts(ctx)
		if err != nil {
			t.Fatalf("%s: %v", d.ReplicaHosts, err)
		}
		if slices.ContainsFunc(hosts, func(h sqlflavor.ReplicaHost) bool { return h.ServerID == id && h.Host == host }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server_id %d (host %s) never showed in %s: %+v", id, host, d.ReplicaHosts, hosts)
		}
	}
}
