package cdc

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
)

// TestEnumSetMembersFromSchemaHistory: under MINIMAL metadata the member
// names come from readside's schema history, not the binlog: from
// information_schema for a table that exists at start (t1), and from the
// DDL text for one created later under SET NAMES latin1 (t2). Quotes,
// escapes, commas, parentheses and non-ASCII latin1 names must come out as
// the source reads them.
func TestEnumSetMembersFromSchemaHistory(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	ctx := t.Context()
	src, _ := startPrivate(t, "members", testbed.MariaDBOptions{Args: []string{"--binlog-row-metadata=MINIMAL"}})
	db, err := src.CreateDatabase(ctx, "members")
	if err != nil {
		t.Fatal(err)
	}
	// Upper-case names ('Up', 'MiX') keep their case: information_schema
	// shows them as written, and so does the source's SELECT.
	enum := `ENUM('it''s','a,b','(p)','ünï','x\ny','b\\s','q"q','n\0z','tr  ','Up')`
	set := `SET('ünï','it''s','(p)','x\ny','c)(d','MiX')`
	const members = 10
	ddl := func(name string) string {
		return fmt.Sprintf("CREATE TABLE `%s`.%s (id INT PRIMARY KEY, e %s, s %s) CHARACTER SET latin1", db, name, enum, set)
	}
	if err := src.Exec(ctx, ddl("t1")); err != nil {
		t.Fatal(err)
	}
	// information_schema (utf8mb3) shows '😀' as '?': t3's names must come
	// from the server itself, and a member that is '?' stays one.
	wide := []string{"a", "😀", "Up", "?", "x😀y"}
	if err := src.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.t3 (id INT PRIMARY KEY, e ENUM('a','😀','Up','?','x😀y'), s SET('a','😀','Up','?','x😀y')) CHARACTER SET utf8mb4", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".t1", db+".t2", db+".t3")
	cfg.Source.DSN = config.Secret(src.ReplDSN())
	startTailer(t, cfg)
	waitForTailerOn(t, bed, src, cfg)

	conn, err := src.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, conn, "SET NAMES latin1")
	latin1DDL, err := charmap.Windows1252.NewEncoder().String(ddl("t2"))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, latin1DDL)
	mustExec(t, conn, "SET NAMES utf8mb4")
	for _, tbl := range []string{"t1", "t2"} {
		// Numbers pick members by index (ENUM) and bit (SET).
		for i := 1; i <= members; i++ {
			mustExec(t, conn, fmt.Sprintf("INSERT INTO `%s`.%s VALUES (%d, %d, %d)", db, tbl, i, i, (1<<(i-1))%64+1))
		}
		mustExec(t, conn, fmt.Sprintf("INSERT INTO `%s`.%s VALUES (%d, NULL, 63)", db, tbl, members+1))
	}
	for _, tbl := range []string{"t1", "t2"} {
		want := map[string]string{}
		rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT id, COALESCE(e, '<NULL>'), s FROM `%s`.%s", db, tbl))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, e, s string
			if err := rows.Scan(&id, &e, &s); err != nil {
				t.Fatal(err)
			}
			want[id] = fmt.Sprintf("e=%q s=%q", e, s)
		}
		rows.Close()
		cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, tbl))
		for _, ev := range cons.next(members+1, 90*time.Second) {
			e := ev.After["e"]
			if e == nil {
				e = "<NULL>"
			}
			id := fmt.Sprint(ev.After["id"])
			if got := fmt.Sprintf("e=%q s=%q", e, ev.After["s"]); got != want[id] {
				t.Errorf("%s row %s: event %s, source %s", tbl, id, got, want[id])
			}
		}
	}

	for i := range wide {
		mustExec(t, conn, fmt.Sprintf("INSERT INTO `%s`.t3 VALUES (%d, %d, %d)", db, i+1, i+1, 1<<i|1<<((i+1)%len(wide))))
	}
	want := map[string]string{}
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT id, e, s FROM `%s`.t3", db))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, e, s string
		if err := rows.Scan(&id, &e, &s); err != nil {
			t.Fatal(err)
		}
		want[id] = fmt.Sprintf("e=%q s=%q", e, s)
	}
	rows.Close()
	if want["2"] != `e="😀" s="😀,Up"` {
		t.Fatalf("the source reads t3 row 2 as %s", want["2"])
	}
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "t3"))
	for _, ev := range cons.next(len(wide), 90*time.Second) {
		id := fmt.Sprint(ev.After["id"])
		if got := fmt.Sprintf("e=%q s=%q", ev.After["e"], ev.After["s"]); got != want[id] {
			t.Errorf("t3 row %s: event %s, source %s", id, got, want[id])
		}
	}
}
