package projections

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestSourceColumnsTLSAndClose: the reader of column types for Debezium's
// JSON without the schema block connects to the source as every source
// connection does, under source.tls (the test bed's MariaDB offers no
// TLS, so a TLS mode must refuse it rather than read in plaintext), and
// CloseInput closes its pool, which the next read opens again.
func TestSourceColumnsTLSAndClose(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "srccols")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, amount DECIMAL(10,2))"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("srccols", db+".t")
	cfg.Input = config.Input{Kind: config.InputDebezium, TopicPrefix: "d", Format: config.InputJSON, Debezium: cfg.Input.Debezium}
	cfg.Input.Debezium.Schemas.Enable = false

	cfg.Source.TLS = config.TLS{Mode: config.TLSVerifyCA}
	_, src := liveInput(cfg)
	if _, err := src.Columns(ctx, db, "t"); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("source.tls verify_ca against a server without TLS: got %v, want the connection refused for TLS", err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.Source.TLS = config.TLS{Mode: config.TLSDisabled}
	p := &Projection{Name: "p"}
	p.live, p.liveSource = liveInput(cfg)
	cols, err := p.liveSource.Columns(ctx, db, "t")
	if err != nil || len(cols) != 2 {
		t.Fatalf("reading the columns in plaintext: %d columns, %v; want 2", len(cols), err)
	}
	pool := p.liveSource.db
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	if err := pool.PingContext(ctx); err == nil {
		t.Fatal("CloseInput left the source pool open")
	}
	if cols, err := p.liveSource.Columns(ctx, db, "t"); err != nil || len(cols) != 2 {
		t.Fatalf("reading again after CloseInput: %d columns, %v; want the pool reopened and 2 columns", len(cols), err)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
}
