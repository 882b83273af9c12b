package testbed

import (
	"math/rand/v2"
	"strconv"

	"github.com/readside/readside/config"
)

// Config is a config capturing tables from the test bed's MariaDB into its
// broker, under topics named prefix plus a random number (so a rerun
// against the same broker starts clean), with a fresh server_id, 4
// partitions, and the initial snapshot off: tests of the live stream
// compare exact histories, and snapshot tests turn it on themselves. The
// caller adds sinks and projections.
func (b *Bed) Config(prefix string, tables ...string) config.Config {
	cfg := config.Default()
	cfg.Source.DSN = config.Secret(b.MySQL.ReplDSN())
	cfg.Source.ServerID = NewServerID()
	cfg.Source.Tables = tables
	cfg.Source.Snapshot.Mode = "never"
	cfg.Kafka.Brokers = b.Kafka.Brokers()
	cfg.Kafka.TopicPrefix = prefix + strconv.Itoa(rand.IntN(1e9))
	cfg.Kafka.Partitions = 4
	return cfg
}
