package main

// readside's tailer writing Debezium's format (`kafka.format: debezium`,
// issue 43) on the same seeded stream as both sides of `make bench-peers`:
// what a team that keeps Debezium's consumers and swaps the connector for
// the tailer gets, set against the connector itself.

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/readside/readside/debezium"
)

// formatDrain drains w's stream with the tailer in kafka.format (no
// projection: the topics are the product) from a source database of its
// own, and sets the ratio to Debezium's source drain of the same stream.
func (d *dbz) formatDrain(ctx context.Context, w workload, format string, pw *peerWorkload) error {
	e := d.e
	restore, err := e.ownDatabases(ctx, w.Name+"_"+strings.ReplaceAll(format, "-", "_"), "")
	if err != nil {
		return err
	}
	defer restore()
	tbl := tableName(w)
	prefix := prefixFor(tbl)
	if err := e.bed.MySQL.Exec(ctx, w.tableDDL(e.srcDB, tbl)); err != nil {
		return err
	}
	cfgPath, err := e.config("p_"+tbl, tbl, prefix, false)
	if err != nil {
		return err
	}
	extra := ""
	if format == "debezium-avro" {
		// franz-go's in-memory registry, as the tests use (docs/testing.md
		// says why no real one runs here): registration is one HTTP round
		// trip per table shape, not per event.
		reg := srfake.New()
		defer reg.Close()
		extra = "  schema_registry: {url: \"" + reg.URL() + "\"}\n"
	}
	if err := withKafkaFormat(cfgPath, format, extra); err != nil {
		return err
	}
	gen := newGenerator(w, e.bed.MySQL.DB(), e.srcDB, tbl)
	if err := gen.preload(ctx); err != nil {
		return err
	}
	if err := e.primeTailer(ctx, cfgPath, prefix); err != nil {
		return err
	}
	if err := gen.backlog(ctx); err != nil {
		return err
	}
	end, err := e.bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return err
	}
	e.settle(ctx, w.Name+": the tailer's drain in "+format+" format")
	topic := debezium.Topic(prefix, e.srcDB, tbl)
	r, err := e.tailerDrain(ctx, cfgPath, prefix, topic, end, w)
	if err != nil {
		return err
	}
	pw.Formats = append(pw.Formats, formatDrainResult{Format: format, Tailer: r})
	if pw.Source.PerS > 0 {
		pw.Formats[len(pw.Formats)-1].SourceRatio = r.PerS / pw.Source.PerS
	}
	// The drain ended at the checkpoint covering the backlog; the topic's
	// end offsets also count transaction markers, so the records are
	// counted by reading them.
	recs, err := e.readTopic(ctx, topic, w.Events)
	if err != nil {
		return fmt.Errorf("reading the %s-format topic %s: %w", format, topic, err)
	}
	if len(recs) != w.Events {
		return fmt.Errorf("the %s-format topic %s holds %d records, the stream wrote %d row events", format, topic, len(recs), w.Events)
	}
	return nil
}

// formatDrainResult is one formatDrain's tailer drain and its ratio to
// Debezium's source drain of the same stream.
type formatDrainResult struct {
	Format      string  `json:"format"`
	Tailer      rate    `json:"tailer"`
	SourceRatio float64 `json:"tailer_vs_debezium_source"`
}

// withKafkaFormat sets kafka.format (and the kafka keys in extra) in a
// config config() wrote.
func withKafkaFormat(path, format, extra string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := strings.Replace(string(b), "  partitions: 6\n", "  partitions: 6\n  format: "+format+"\n"+extra, 1)
	if s == string(b) {
		return fmt.Errorf("%s: no kafka section to add format to", path)
	}
	return os.WriteFile(path, []byte(s), 0o600)
}
