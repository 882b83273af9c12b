package e2e

import (
	"path/filepath"
	"testing"
	"time"
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
	rb.insertMessages(600, 47)
	oldShards := []string{rb.dbs[0], rb.dbs[1]}
	rb.readRows([]int{0, 1}, oldShards, "TRUE", 600, logPath)

	first := rb.startReshard("filling", "--chunk-rows", "50")
	rb.killAtPause(first, "filling")
	if err := rb.bed.MySQL.Exec(ctx, "ALTER TABLE "+table+" MODIFY body VARCHAR(300)",
		"UPDATE "+table+" SET body = CONCAT(REPEAT('é', 250), id) WHERE id % 3 = 0"); err != nil {
		t.Fatal(err)
	}
	rb.readRows([]int{0, 1}, oldShards, "CHAR_LENGTH(body) > 250", 200, logPath)

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
