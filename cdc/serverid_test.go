package cdc

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

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
	tl, err := New(cfg, cfg.Kafka.Brokers, testLogger(t), nil)
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
