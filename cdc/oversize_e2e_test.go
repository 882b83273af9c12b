package cdc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestLargeRowRoundTrips: a 16 MiB LONGBLOB (random bytes) is inserted,
// updated (a 32 MiB rows event: before and after image) and deleted; every
// event carries the exact bytes.
func TestLargeRowRoundTrips(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.b (id INT PRIMARY KEY, n INT, b LONGBLOB)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".b")
	cfg.Kafka.MaxMessageBytes = 64 << 20
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "b"))
	startTailer(t, cfg)
	waitForTailer(t, bed, cfg)

	blob := make([]byte, 16<<20)
	rand.Read(blob)
	if _, err := bed.MySQL.DB().ExecContext(ctx, fmt.Sprintf("INSERT INTO `%s`.b VALUES (1, 0, ?)", db), blob); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.b SET n = 1", db), fmt.Sprintf("DELETE FROM `%s`.b", db)); err != nil {
		t.Fatal(err)
	}
	events := cons.next(3, 120*time.Second)
	check := func(what string, img map[string]any) {
		t.Helper()
		s, _ := img["b"].(string)
		got, err := base64.StdEncoding.DecodeString(s)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("%s: %d bytes (%v), want the %d bytes written", what, len(got), err, len(blob))
		}
	}
	for _, e := range events {
		t.Logf("%s event: %d bytes", e.Op, len(e.raw))
		switch e.Op {
		case "c":
			check("insert after", e.After)
		case "u":
			check("update before", e.Before)
			check("update after", e.After)
		case "d":
			check("delete before", e.Before)
		}
	}
	if ops := events[0].Op + events[1].Op + events[2].Op; ops != "cud" {
		t.Errorf("ops %s, want cud", ops)
	}
}

// TestOversizedEvent: a rows event larger than the tailer's limit
// (source.max_event_bytes) stops it before decoding, naming the limit and
// the fix; one the source refuses to send (its max_allowed_packet) stops it
// naming max_allowed_packet on the source.
func TestOversizedEvent(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	ctx := t.Context()
	src, dir := startPrivate(t, "oversize", testbed.MariaDBOptions{})
	db, err := src.CreateDatabase(ctx, "over")
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{"b", "uncaptured"} {
		if err := src.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.%s (id INT PRIMARY KEY, b LONGBLOB)", db, tbl)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(cfg config.Config) error {
		t.Helper()
		tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return tl.Run(runCtx)
	}

	// The tailer's own limit.
	cfg := tailerConfig(t, bed, db+".b")
	cfg.Source.DSN = config.Secret(src.ReplDSN())
	cfg.Source.MaxEventBytes = 2 << 20
	cfg.Kafka.MaxMessageBytes = 16 << 20
	stop := startTailer(t, cfg)
	waitForTailerOn(t, bed, src, cfg)
	// A table the tailer does not capture is not decoded at all, so its
	// events are not held to the limit: a bigger one passes by.
	if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.uncaptured VALUES (1, REPEAT('x', 3 << 20))", db)); err != nil {
		t.Fatal(err)
	}
	if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.b VALUES (0, 'small')", db)); err != nil {
		t.Fatal(err)
	}
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "b"))
	if e := cons.next(1, 60*time.Second)[0]; fmt.Sprint(e.After["id"]) != "0" {
		t.Fatalf("first event %s, want row 0, written after the uncaptured table's", e.raw)
	}
	if err := stop(); err != nil {
		t.Fatalf("an event of an uncaptured table over source.max_event_bytes stopped the tailer: %v", err)
	}
	if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.b VALUES (1, REPEAT('x', 3 << 20))", db)); err != nil {
		t.Fatal(err)
	}
	err = run(cfg)
	var fatal *FatalError
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "source.max_event_bytes") || !strings.Contains(err.Error(), "max_allowed_packet") {
		t.Fatalf("event over source.max_event_bytes: %v; want a fatal error naming the limit and the fix", err)
	}
	t.Logf("tailer limit: %v", err)
	// Raising the limit as the error says lets it through.
	cfg.Source.MaxEventBytes = 8 << 20
	stop = startTailer(t, cfg)
	if e := cons.next(1, 60*time.Second)[0]; len(e.raw) < 3<<20 {
		t.Errorf("event of %d bytes after raising the limit", len(e.raw))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// The source's limit. MariaDB reads binlog events up to 1 GiB whatever
	// its max_allowed_packet, too big to write here: the next event's
	// length field is made to say 1.25 GiB while the server is down, which
	// is exactly what the server checks before sending an event.
	if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.b VALUES (2, 'small')", db)); err != nil {
		t.Fatal(err)
	}
	file, pos := lastEvent(t, src, "Write_rows_v1")
	if err := src.Stop(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "data", file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[pos+9:], 0x50000000) // event header: timestamp(4) type(1) server_id(4) event_size(4)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := src.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	err = run(cfg)
	if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "max_allowed_packet on the source") {
		t.Fatalf("event over the source's max_allowed_packet: %v; want a fatal error naming the source's max_allowed_packet", err)
	}
	t.Logf("source limit: %v", err)
}

// lastEvent is the file and offset of the last binlog event of a type.
func lastEvent(t *testing.T, src *testbed.MySQL, eventType string) (string, int) {
	t.Helper()
	p, err := src.CurrentPosition(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := src.DB().QueryContext(t.Context(), "SHOW BINLOG EVENTS IN '"+p.File+"'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	pos := -1
	for rows.Next() {
		vals, err := scanRaw(rows)
		if err != nil {
			t.Fatal(err)
		}
		if string(vals[2]) == eventType {
			pos = int(atoiRaw(vals[1]))
		}
	}
	if pos < 0 {
		t.Fatalf("no %s event in %s", eventType, p.File)
	}
	return p.File, pos
}
