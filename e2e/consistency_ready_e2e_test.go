package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestConsistentSinkStallUnready: a transaction-consistent sink whose
// commits cannot land — another session holds its frontier row, as an
// applier frozen inside a commit holds it — leaves its projections'
// lag growing from the first source transaction it could not apply:
// readside_projection_lag_seconds shows it and /readyz answers 503 naming
// the projection once the lag passes http.ready_max_lag; once the row is
// released the commit lands and /readyz answers 200 again.
func TestConsistentSinkStallUnready(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sink := sourceAndSinkDBs(t, bed, "consready")
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, n INT NOT NULL)", "INSERT INTO `"+src+"`.t VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	head := bedConfigHead(bed, []string{src + ".t"}, "consready", filepath.Join(dir, "data"), sink)
	head = strings.Replace(head, "\nprojections:\n", "\n    consistency: transaction\nprojections:\n", 1)
	cfg := head + fmt.Sprintf("  t_copy:\n    from: %s.t\n    sink: reads\n    key: [id]\n    columns: {id: id, n: n}\nhttp: {ready_max_lag: 3s}\n", src)
	cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "run.log")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	d := startDaemon(t, logPath, "run", "-c", cfgPath, "--http", httpAddr)
	ready := func() (int, string) {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		var n int
		err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+sink+"`.t_copy").Scan(&n)
		code, body := ready()
		return err == nil && n == 1 && code == http.StatusOK, fmt.Sprintf("the copy (%v) and /readyz %d %s; log:\n%s", err, code, body, tail(logPath))
	})

	holder, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "SELECT * FROM `"+sink+"`.`_readside_frontier` FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "UPDATE `"+src+"`.t SET n = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		code, body := ready()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "projection t_copy lag"),
			fmt.Sprintf("/readyz %d %s while the sink's commits cannot land", code, body)
	})
	if _, body := httpGet(t, httpAddr, "/metrics"); !strings.Contains(string(body), `readside_projection_lag_seconds{projection="t_copy"}`) {
		t.Errorf("/metrics has no readside_projection_lag_seconds of the consistent sink's projection")
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		var n int
		err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT n FROM `"+sink+"`.t_copy WHERE id = 1").Scan(&n)
		code, body := ready()
		return err == nil && n == 1 && code == http.StatusOK, fmt.Sprintf("after the release: the copy's n %d (%v), /readyz %d %s", n, err, code, body)
	})
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
	}
}
