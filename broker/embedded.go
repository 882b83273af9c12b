// Package broker runs the embedded single-node Kafka broker `readside run`
// starts when no kafka.brokers are configured: franz-go's kfake in this
// process, listening on a loopback address, with its data on disk.
//
// Durability, as measured with kill -9: kfake persists records of
// explicitly created topics (CreateTopics) with every write fsynced
// (SyncWrites), and producer ids, transactions and consumer groups in
// append-only logs; the metadata of auto-created topics is written only on
// a clean shutdown, so auto-creation is left off. readside creates every
// topic it uses explicitly (cdc/publisher.go), and keeps projection offsets
// in the sinks, so a crash of the whole process loses nothing committed.
// kfake keeps no transaction log, so a transaction a crash cut off gets its
// abort marker at start (recover.go).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is a running embedded broker.
type Embedded struct {
	cluster *kfake.Cluster
	addr    string
	dir     string
}

// StartEmbedded starts the broker on listen (a loopback host:port) with
// its data in dir, reloading what a previous run left there.
func StartEmbedded(dir, listen string, log *slog.Logger) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded broker: creating its data directory: %w (set data_dir to a writable directory)", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		// kfake binds 127.0.0.1:<port> itself; listen on the configured
		// loopback address instead.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			ln, err := net.Listen(network, listen)
			if err != nil {
				return nil, fmt.Errorf("embedded broker: listening on %s (kafka.embedded_listen): %w; is another readside or Kafka using it? Pick a free port", listen, err)
			}
			return ln, nil
		}),
		kfake.DataDir(abs),
		// Every produce is fsynced before it is acknowledged: a crash (or
		// kill -9) loses nothing a transaction committed.
		kfake.SyncWrites(),
		kfake.WithLogger(kfakeLogger{log}),
		// Room for kafka.max_message_bytes up to 16 MiB.
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": "16777216"}),
	)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded broker with data in %s: %w", abs, err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		return nil, errors.New("embedded broker: expected one listener")
	}
	ctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	defer cancel()
	if _, err := finishCutTransactions(ctx, addrs[0], log); err != nil {
		c.Close()
		return nil, fmt.Errorf("embedded broker: ending the transactions a crash cut off (data in %s): %w", abs, err)
	}
	return &Embedded{cluster: c, addr: addrs[0], dir: abs}, nil
}

// Addr is the host:port clients connect to.
func (e *Embedded) Addr() string { return e.addr }

// Dir is the absolute path of the broker's data.
func (e *Embedded) Dir() string { return e.dir }

// Close stops the broker and writes its state; call it after every client
// of it has stopped.
func (e *Embedded) Close() { e.cluster.Close() }

// kfakeLogger hands kfake's warnings and errors to slog; its info and debug
// lines are per request and would drown the daemon's own log.
type kfakeLogger struct{ log *slog.Logger }

func (l kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	switch level {
	case kfake.LogLevelError:
		l.log.Error(fmt.Sprintf(format, args...), "component", "embedded-broker")
	case kfake.LogLevelWarn:
		// kfake warns whenever ending a transaction takes over 5 ms, which
		// with SyncWrites (an fsync per commit) is most commits on a
		// loaded disk: a line per commit, not news. readside times its
		// commits in readside_produce_commit_seconds.
		if strings.HasPrefix(format, "txn: EndTxn slow") {
			l.log.Debug(fmt.Sprintf(format, args...), "component", "embedded-broker")
			return
		}
		l.log.Warn(fmt.Sprintf(format, args...), "component", "embedded-broker")
	}
}
