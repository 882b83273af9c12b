package cdc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestServerIDStolen: when another binlog client connects with the
// tailer's server_id, the source drops the tailer's stream. Reconnecting
// would make the two take the id from each other forever, so the tailer
// stops and names the conflict.
func TestServerIDStolen(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "sid")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".none")
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	waitForTailer(t, bed, cfg)

	user, pw := bed.MySQL.ReplCredentials()
	other := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: cfg.Source.ServerID, Flavor: "mariadb",
		Host: bed.MySQL.Host, Port: uint16(bed.MySQL.Port), User: user, Password: pw})
	defer other.Close()
	pos, err := bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := other.StartSync(mysql.Position{Name: pos.File, Pos: pos.Pos})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			if _, err := st.GetEvent(ctx); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-done:
		var fatal *FatalError
		if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "server_id") {
			t.Errorf("tailer stopped with %v; want a fatal server_id conflict", err)
		}
		t.Logf("tailer: %v", err)
	case <-time.After(30 * time.Second):
		t.Error("the tailer kept running while another client used its server_id")
	}
}

// TestServerIDPreflight: before connecting, a tailer whose server_id a
// registered replica already uses stops with the conflict and the fix, and
// leaves the other replica's stream alone; a registration under its own
// host name (its earlier, killed session) is no conflict; nor is missing
// the privilege to list replicas (a warning, then the runtime check).
func TestServerIDPreflight(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	ctx := t.Context()
	src, _ := startPrivate(t, "serverid", testbed.MariaDBOptions{})
	if err := src.Exec(ctx, "GRANT "+src.Dialect().ReplicaHostsPrivilege+" ON *.* TO '"+testbed.ReplUser+"'@'%'"); err != nil {
		t.Fatal(err)
	}
	db, err := src.CreateDatabase(ctx, "sidp")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".none")
	cfg.Source.DSN = config.Secret(src.ReplDSN())

	// Another replica with the tailer's server_id.
	user, pw := src.ReplCredentials()
	replica := func(host string) (errs chan error, stop func()) {
		syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: cfg.Source.ServerID, Flavor: "mariadb",
			Host: src.Host, Port: uint16(src.Port), User: user, Password: pw, Localhost: host, HeartbeatPeriod: time.Second, Logger: testLogger(t)})
		pos, err := src.CurrentPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, err := syncer.StartSync(mysql.Position{Name: pos.File, Pos: pos.Pos})
		if err != nil {
			t.Fatal(err)
		}
		errs = make(chan error, 1)
		go func() {
			for {
				if _, err := st.GetEvent(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
		// Registered once the source's replica list shows it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int
			rows, err := src.DB().QueryContext(ctx, src.Dialect().ReplicaHosts)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				n++
			}
			rows.Close()
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the replica never showed in " + src.Dialect().ReplicaHosts)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return errs, syncer.Close
	}
	errs, stopOther := replica("other-replica")
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = tl.Run(runCtx)
	cancel()
	var fatal *FatalError
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "source.server_id") || !strings.Contains(err.Error(), "other-replica") {
		t.Fatalf("server_id used by another replica: %v; want a fatal error naming it and source.server_id", err)
	}
	t.Logf("refused: %v", err)
	// The other replica was not disturbed: it still streams.
	if err := src.Exec(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Errorf("the other replica's stream broke: %v", err)
	case <-time.After(3 * time.Second):
	}
	stopOther()

	// Its own earlier session: the tailer starts (and takes the id over).
	errs, stopOwn := replica(replicaHost(cfg.TransactionalID()))
	defer stopOwn()
	startTailer(t, cfg)
	waitForTailerOn(t, bed, src, cfg)
	select {
	case <-errs: // the source dropped the stale session
	case <-time.After(10 * time.Second):
		t.Error("the stale session with the tailer's server_id was not replaced")
	}
}
