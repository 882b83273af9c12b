package main

// A Debezium connector's topics (input.kind: debezium) are the
// connector's to create, not readside's. A projection that reads a topic
// the broker does not have waits for it without an error — its read
// table empty while nothing says why — so a wrong input.topic_prefix
// would look like a quiet source. `check` reports each such topic,
// naming the prefix under which the broker holds that table's topic when
// one does; `run` warns of them until they appear, and a projection's
// caught-up line waits for its topics.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/projections"
)

// missingTopic is a topic a projection reads that the broker does not have.
type missingTopic struct {
	projection, topic, table string
	// elsewhere are topics the broker has for the same table under
	// other prefixes.
	elsewhere []string
}

// what and fix are the finding or the warning about it.
func (m missingTopic) what(prefix string) string {
	s := fmt.Sprintf("projection %s reads topic %s (input.topic_prefix %q, table %s), which the broker does not have", m.projection, m.topic, prefix, m.table)
	if len(m.elsewhere) > 0 {
		s += "; it has " + strings.Join(m.elsewhere, ", ")
	}
	return s
}

func (m missingTopic) fix() string {
	if len(m.elsewhere) > 0 {
		return fmt.Sprintf("set input.topic_prefix: %s (the connector's topic.prefix)", strings.TrimSuffix(m.elsewhere[0], topicSuffix(m.table)))
	}
	return fmt.Sprintf("set input.topic_prefix to the connector's topic.prefix, and have the connector capture %s (table.include.list); until the topic exists the projection waits for it", m.table)
}

// topicSuffix is ".<db>.<table>" of table (db.table) as Debezium names
// topics: what follows the prefix.
func topicSuffix(table string) string {
	db, tbl, _ := config.SplitTable(table)
	return strings.TrimPrefix(debezium.Topic("x", db, tbl), "x")
}

// missingInputTopics are the topics of ps the broker does not have (none
// unless the projections read a Debezium connector's topics).
func missingInputTopics(ctx context.Context, cfg config.Config, ps []*projections.Projection) ([]missingTopic, error) {
	if cfg.Input.Kind != config.InputDebezium || len(ps) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Kafka.Brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	var out []missingTopic
	for _, p := range ps {
		tables := p.TopicTables()
		for _, topic := range slices.Sorted(maps.Keys(tables)) {
			if listed.Has(topic) {
				continue
			}
			m := missingTopic{projection: p.Name, topic: topic, table: tables[topic]}
			suffix := topicSuffix(m.table)
			for _, t := range listed.Names() {
				if strings.HasSuffix(t, suffix) && len(t) > len(suffix) {
					m.elsewhere = append(m.elsewhere, t)
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// topicWatch warns, every interval until the broker has them, of the
// Debezium topics the projections read and the broker does not have; a
// projection reading one waits (its caught-up line held back).
type topicWatch struct {
	mu      sync.Mutex
	checked bool            // the broker's topics were listed once
	missing map[string]bool // by projection
}

// waits reports whether projection name reads a topic not there yet (or
// not known to be there).
func (w *topicWatch) waits(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.checked || w.missing[name]
}

// run checks at once, then every interval, until no topic is missing.
func (w *topicWatch) run(ctx context.Context, cfg config.Config, ps []*projections.Projection, interval time.Duration, log *slog.Logger) {
	for {
		missing, err := missingInputTopics(ctx, cfg, ps)
		if err != nil {
			log.Debug("listing the broker's topics", "err", err)
		} else {
			byName := map[string]bool{}
			for _, m := range missing {
				byName[m.projection] = true
				log.Warn(m.what(cfg.Input.TopicPrefix), "projection", m.projection, "topic", m.topic, "fix", m.fix())
			}
			w.mu.Lock()
			w.checked, w.missing = true, byName
			w.mu.Unlock()
			if len(missing) == 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
