package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/sinks"
	"github.com/readside/readside/verify"
)

// TestReshardBackOntoAnEarlierCopy: a projection moved away from its
// sink without --cleanup leaves its copy there; rows the source deletes
// afterwards stay in that copy. Moved back, the reshard removes the
// earlier copy before it fills (nothing there is served), so its check
// passes and the read table equals the source — it used to fail the check
// for good on the deleted rows.
func TestReshardBackOntoAnEarlierCopy(t *testing.T) {
	rb := newReshardBed(t, "rsback")
	ctx := t.Context()
	var away [2]string
	for i := range away {
		var err error
		if away[i], err = rb.servers[i+1].CreateDatabase(ctx, "rsback_away"); err != nil {
			t.Fatal(err)
		}
	}
	cfgText, err := os.ReadFile(rb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	withAway := strings.Replace(string(cfgText), "projections:\n", fmt.Sprintf(`  away:
    shards:
      - {keyrange: "-80", dsn: %q}
      - {keyrange: "80-", dsn: %q}
projections:
`, rb.servers[1].AdminDSN()+away[0], rb.servers[2].AdminDSN()+away[1]), 1)
	if err := os.WriteFile(rb.cfgPath, []byte(withAway), 0o600); err != nil {
		t.Fatal(err)
	}
	if rb.cfg, err = config.Load(rb.cfgPath, nil); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(rb.dir, "readside.log")
	d := startDaemon(t, logPath, "run", "-c", rb.cfgPath)
	table := "`" + rb.src + "`.messages"
	rb.insertMessages(300, 59)
	rb.readRows([]int{0, 1}, []string{rb.dbs[0], rb.dbs[1]}, "TRUE", 300, logPath)
	reshard := func(sink string) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(rctx, readsideBinary(t), "reshard", "-c", rb.cfgPath, "--projection", "messages_by_sender",
			"--sink", sink, "--to", "-80,80-", "--yes").CombinedOutput()
		if err != nil {
			t.Fatalf("reshard to %s: %v\n%s", sink, err, out)
		}
	}
	reshard("away") // no --cleanup: the copy on reads stays
	if err := rb.bed.MySQL.Exec(ctx, "DELETE FROM "+table+" WHERE id <= 50"); err != nil {
		t.Fatal(err)
	}
	rb.readRows([]int{1, 2}, away[:], "TRUE", 250, logPath)
	reshard("reads")

	src, err := verify.OpenSource(config.Source{DSN: config.Secret(rb.bed.MySQL.AdminDSN())})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sink, err := sinks.OpenSharded(ctx, "reads", rb.cfg.Sinks["reads"])
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	p := rb.projection()
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		rep, err := verify.New(p, src, sink, verify.Options{Settle: 5 * time.Second, Ends: projector.Ends(rb.bed.Kafka.Brokers())}).Run(ctx)
		if err != nil {
			return false, err.Error()
		}
		return rep.Drift() == 0 && rep.SourceRows == 250, fmt.Sprintf("verify: %+v", *rep)
	})
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d; log:\n%s", code, tail(logPath))
	}
}
