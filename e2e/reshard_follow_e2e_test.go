package e2e

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestReshardFollowsAWideningDuringItsFill: the source widens a column
// while a reshard copies the read table to new shards (here: stopped in
// its fill, the new shards' tables made with the old type). The daemon's
// projector widens the old shards' table and writes the longer values
// there; the rerun brings the new shards' tables to the new type before
// it copies, so the copy takes every row and the reshard finishes with
// the read table equal to the source.
func TestReshardFollowsAWideningDuringItsFill(t *testing.T) {
	rb := newReshardBed(t, "rswid")
	p := rb.projection()
	logPath := filepath.Join(rb.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", rb.cfgPath)
	ctx := t.Context()
	table := "`" + rb.src + "`.messages"
	rng := rand.New(rand.NewPCG(seedFromEnv(t), 47))
	var values []string
	for id := 1; id <= 600; id++ {
		values = append(values, fmt.Sprintf("(%d, %d, '2026-01-01 00:%02d:%02d.%06d', 'm%d')", id, rng.IntN(300), rng.IntN(60), rng.IntN(60), rng.IntN(1e6), id))
	}
	if err := rb.bed.MySQL.Exec(ctx, "INSERT INTO "+table+" VALUES "+strings.Join(values, ", ")); err != nil {
		t.Fatal(err)
	}
	copied := func(where string, want int) {
		t.Helper()
		testbed.Eventually(t, 90*time.Second, func() (bool, string) {
			n := 0
			for i := range 2 {
				var k int
				if err := rb.servers[i].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+rb.dbs[i]+"`.messages_by_sender WHERE "+where).Scan(&k); err != nil {
					return false, err.Error()
				}
				n += k
			}
			return n == want, fmt.Sprintf("%d rows where %s on the old shards, want %d; log:\n%s", n, where, want, tail(logPath))
		})
	}
	copied("TRUE", 600)

	first := rb.startReshard("filling", "--chunk-rows", "50")
	rb.killAtPause(first, "filling")
	if err := rb.bed.MySQL.Exec(ctx, "ALTER TABLE "+table+" MODIFY body VARCHAR(300)",
		"UPDATE "+table+" SET body = CONCAT(REPEAT('é', 250), id) WHERE id % 3 = 0"); err != nil {
		t.Fatal(err)
	}
	copied("CHAR_LENGTH(body) > 250", 200)

	last := rb.startReshard("", "--cleanup")
	select {
	case <-last.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the rerun of the reshard did not finish:\n%s", last.out.String())
	}
	if code := last.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the rerun of the reshard: exit %d:\n%s", code, last.out.String())
	}
	rb.verifyEqual(p)
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d; log:\n%s", code, tail(logPath))
	}
}
