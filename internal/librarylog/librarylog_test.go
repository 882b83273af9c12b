package librarylog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestBinlogErrorsAtWarn: the binlog client's ERROR lines are written at
// WARN with its component; its other levels keep theirs.
func TestBinlogErrorsAtWarn(t *testing.T) {
	var buf bytes.Buffer
	l := Binlog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Error("io.ReadFull(header) failed. err EOF: connection was bad")
	l.Info("syncer is closing...")
	l.Debug("hidden")
	got := buf.String()
	for _, want := range []string{`level=WARN msg="io.ReadFull(header) failed. err EOF: connection was bad" component=binlog`, `level=INFO msg="syncer is closing..." component=binlog`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ERROR") || strings.Contains(got, "hidden") {
		t.Errorf("an ERROR or a DEBUG line written:\n%s", got)
	}
}

// TestMySQLDriverLinesInTheLog: what the MySQL driver logs (it writes to
// stderr with Go's standard logger otherwise) is one JSON line of the
// process's log, at WARN with component=mysql.
func TestMySQLDriverLinesInTheLog(t *testing.T) {
	var buf bytes.Buffer
	RouteMySQLDriver(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { RouteMySQLDriver(slog.New(slog.DiscardHandler)) })
	// The driver logs through the Logger of each connection's config,
	// which a DSN parsed after the routing takes.
	cfg, err := mysql.ParseDSN("u:p@tcp(127.0.0.1:1)/db")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Print("packets.go:58 unexpected EOF\n")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q (%v)", buf.String(), err)
	}
	if line["level"] != "WARN" || line["component"] != "mysql" || line["msg"] != "packets.go:58 unexpected EOF" {
		t.Errorf("line %v, want level WARN, component mysql, the driver's text", line)
	}
}
