package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestProjectionOverColumnAddedLater: a projection declared after an
// ALTER TABLE … ADD COLUMN reads events written before it, which lack the
// column (the ALTER writes no row events). by_note maps a column added
// NULL DEFAULT NULL, on the messages and, through a join, on their
// sender: it fills from the whole history and equals the source, rows
// untouched since the ALTER included (NULL there). by_prio maps a column
// added NOT NULL DEFAULT 3: it stops, saying the column was added after
// those events with its default and the fix, while the others go on.
// by_secret maps a column in source.exclude_columns (NULL DEFAULT NULL
// too): SIGHUP refuses it, naming the exclusion.
func TestProjectionOverColumnAddedLater(t *testing.T) {
	r := newIsolationRig(t, "isoadd", "")
	ctx := t.Context()
	senders := "`" + r.src + "`.senders"
	if err := r.bed.MySQL.Exec(ctx, "CREATE TABLE "+senders+" (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(r.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.bed.MySQL.Exec(ctx, "ALTER TABLE `"+r.src+"`.messages ADD COLUMN secret VARCHAR(20) NULL"); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), ".messages]", ".messages, "+r.src+".senders]\n  exclude_columns: ["+r.src+".messages.secret]", 1)
	if cfg == string(b) {
		t.Fatalf("no source.tables list ending in .messages in:\n%s", b)
	}
	if err := os.WriteFile(r.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r.insert(1, 20, 10)
	for i := range 7 {
		if err := r.bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d, 's%d')", senders, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	r.d = r.start()
	r.waitReady(120 * time.Second)
	r.converge(time.Minute)
	for _, q := range []string{
		"ALTER TABLE `" + r.src + "`.messages ADD COLUMN note VARCHAR(20) NULL, ADD COLUMN prio INT NOT NULL DEFAULT 3",
		"ALTER TABLE " + senders + " ADD COLUMN team VARCHAR(20) NULL",
		"UPDATE `" + r.src + "`.messages SET note = 'changed' WHERE id = 5",
		"UPDATE " + senders + " SET team = 'blue' WHERE id = 2",
	} {
		if err := r.bed.MySQL.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r.insert(21, 30, 10)
	r.converge(time.Minute)

	added := strings.ReplaceAll(`  by_note:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, note: note, sender_id: sender_id}
    join:
      - {from: SRC.senders, on: {id: sender_id}, columns: {team: team}}
  by_prio:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, prio: prio}
  by_secret:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, secret: secret}
`, "SRC", r.src)
	if err := os.WriteFile(r.cfgPath, []byte(strings.Replace(cfg, "projections:\n", "projections:\n"+added, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r.sighup("SIGHUP: started the projector of a new projection")
	r.sameRows("a projection over a column added NULL DEFAULT NULL",
		"SELECT m.id, m.note, s.team FROM `"+r.src+"`.messages m LEFT JOIN "+senders+" s ON s.id = m.sender_id ORDER BY m.id",
		"SELECT id, note, team FROM `"+r.sink+"`.by_note ORDER BY id", 2*time.Minute)
	// A projection SIGHUP added is not on /status (it keeps the start's
	// list): its stop is read from the log.
	reason := "source column " + r.src + ".messages.prio, which projections.by_prio.columns.prio maps, is missing from events written before an ALTER TABLE added it (the source has it now, DEFAULT 3)"
	fix := "readside snapshot --table " + r.src + ".messages --wait"
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		l := r.log()
		return strings.Contains(l, `projection=by_prio err="projection by_prio stopped: `+reason) && strings.Contains(l, fix),
			fmt.Sprintf("no stop of by_prio saying %q with the fix %q; log:\n%s", reason, fix, tail(r.logPath))
	})
	// An excluded column is in no event, whatever its default: the
	// projection mapping it is refused, not filled with NULL.
	if l := r.log(); !strings.Contains(l, `SIGHUP: new projections not started`) || !strings.Contains(l, "secret is in source.exclude_columns: no event carries it") {
		t.Errorf("by_secret, which maps an excluded column, was not refused naming it; log:\n%s", tail(r.logPath))
	}
	r.insert(31, 35, 10)
	r.converge(time.Minute)
	if code := r.d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}
