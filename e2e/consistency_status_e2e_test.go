package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// checkFrontierSurfaces is what an operator and an application see of a
// transaction-consistent sink on the running daemon at httpAddr, after
// one more source transaction (a transfer between two accounts, which
// keeps the ledger's invariants):
//   - /wait?sink=reads&gtid=G answers 200, and the read table then shows
//     the transfer (read-your-writes through HTTP, not the library);
//   - /status lists the sink with every shard's frontier at or past G,
//     its commits and source transactions counted and its source commit
//     time the transfer's (to the second);
//   - /metrics has readside_sink_commits_total > 0 for the sink, a
//     readside_sink_commit_failures_total series, the frontier's
//     source timestamp no older than the transfer, and every commit
//     timed in each phase with its cut's age;
//   - `readside status` prints each shard's frontier line.
//
// Each of these is an operator's way to know how far a sink is; a
// surface that drifted from the frontier in the sink would mislead them.
func checkFrontierSurfaces(t *testing.T, bed *testbed.Bed, cfgPath, httpAddr, src string, shards []string) {
	t.Helper()
	ctx := t.Context()
	conn, err := bed.MySQL.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"UPDATE `" + src + "`.accounts SET balance = balance - 7 WHERE id = 1",
		"UPDATE `" + src + "`.accounts SET balance = balance + 7 WHERE id = 2", "COMMIT"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	wrote := time.Now().Add(-time.Second).Unix()
	gtid, err := bed.MySQL.LastGTID(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	if err := conn.QueryRowContext(ctx, "SELECT balance FROM `"+src+"`.accounts WHERE id = 1").Scan(&want); err != nil {
		t.Fatal(err)
	}

	// The daemon may have just been restarted by the kill loop: with the
	// embedded broker, its recovery comes first, and until the pipeline is
	// wired only the health endpoints answer.
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		resp, err := http.Get("http://" + httpAddr + "/status")
		if err != nil {
			return false, fmt.Sprintf("the daemon does not serve %s yet: %v", httpAddr, err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("/status answers %d: the pipeline is not wired yet", resp.StatusCode)
	})
	code, body := httpGet(t, httpAddr, "/wait?sink=reads&timeout=60s&gtid="+gtid)
	if code != http.StatusOK {
		t.Fatalf("/wait?sink=reads&gtid=%s: %d %s", gtid, code, body)
	}
	for _, db := range shards {
		var got int64
		if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT balance FROM `"+db+"`.acct WHERE id = 1").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("after /wait?sink=reads answered for %s, %s.acct holds balance %d for account 1, the source %d", gtid, db, got, want)
		}
	}

	var st struct {
		Sinks []struct {
			Name      string `json:"name"`
			Frontiers []struct {
				Shard             string     `json:"shard"`
				GTID              string     `json:"gtid"`
				Transactions      uint64     `json:"transactions"`
				Commits           uint64     `json:"commits"`
				SourceCommittedAt *time.Time `json:"source_committed_at"`
				Error             string     `json:"error"`
			} `json:"frontiers"`
		} `json:"sinks"`
	}
	// /status is cached for a second (docs/operations.md): the first
	// report after that second reads the frontier anew.
	time.Sleep(1100 * time.Millisecond)
	code, body = httpGet(t, httpAddr, "/status")
	if err := json.Unmarshal(body, &st); err != nil || len(st.Sinks) != 1 || st.Sinks[0].Name != "reads" || len(st.Sinks[0].Frontiers) != len(shards) {
		t.Fatalf("/status (%d, %v) lists no frontier for each of the %d shard(s) of sink reads:\n%s", code, err, len(shards), body)
	}
	seq := gtidSeq(t, gtid)
	for _, f := range st.Sinks[0].Frontiers {
		if f.Error != "" || f.Commits == 0 || f.Transactions == 0 || f.SourceCommittedAt == nil || f.SourceCommittedAt.Unix() < wrote {
			t.Errorf("/status: shard %s's frontier does not show the transfer committed at %d: %+v", f.Shard, wrote, f)
		}
		if !frontierPast(f.GTID, gtid, seq) {
			t.Errorf("/status: shard %s's frontier %q is not at or past %s, which /wait said it applied", f.Shard, f.GTID, gtid)
		}
	}

	code, body = httpGet(t, httpAddr, "/metrics")
	metrics := string(body)
	commits := metricValue(metrics, `readside_sink_commits_total{sink="reads"}`)
	sourceTS := metricValue(metrics, `readside_sink_frontier_source_timestamp_seconds{sink="reads"}`)
	if code != http.StatusOK || commits <= 0 || sourceTS < float64(wrote) || !strings.Contains(metrics, `readside_sink_commit_failures_total{sink="reads"}`) ||
		!strings.Contains(metrics, `readside_sink_commit_transactions_count{sink="reads"}`) {
		t.Errorf("/metrics (%d): readside_sink_commits_total %v, frontier source timestamp %v (transfer at %d), or a failures/transactions series missing", code, commits, sourceTS, wrote)
	}
	// Every commit is timed in each phase and has its cut's age (one
	// commit may land between the scrape's series: off by one at most);
	// apply includes the wait for the commit before.
	for _, series := range []string{`readside_sink_commit_phase_seconds_count{phase="previous",sink="reads"}`, `readside_sink_commit_phase_seconds_count{phase="apply",sink="reads"}`,
		`readside_sink_commit_phase_seconds_count{phase="finish",sink="reads"}`, `readside_sink_commit_cut_age_seconds_count{sink="reads"}`} {
		if n := metricValue(metrics, series); n <= 0 || math.Abs(n-commits) > 1 {
			t.Errorf("/metrics: %s is %v, want the commits (%v)", series, n, commits)
		}
	}
	if apply, previous := metricValue(metrics, `readside_sink_commit_phase_seconds_sum{phase="apply",sink="reads"}`),
		metricValue(metrics, `readside_sink_commit_phase_seconds_sum{phase="previous",sink="reads"}`); apply <= 0 || apply < previous {
		t.Errorf("/metrics: the commits' apply phase summed %v s, their wait for the commit before %v s: apply includes that wait", apply, previous)
	}

	out, _ := readsideOutput(t, cfgPath, "status --http "+httpAddr)
	line := regexp.MustCompile(`sink reads \(consistency: transaction\) shard \S+: frontier gtid \S+,\s+\d+\s+source\s+transactions,\s+[1-9]\d*\s+commits`)
	if n := len(line.FindAllString(out, -1)); n != len(shards) {
		t.Errorf("readside status shows %d frontier lines, want one per shard (%d):\n%s", n, len(shards), out)
	}
}

// httpGet fetches path from the daemon at addr.
func httpGet(t *testing.T, addr, path string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, b
}

// metricValue is the value of the sample whose name and labels are
// series in Prometheus's text format; -1 when there is none.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// gtidSeq is the sequence number of a MariaDB GTID domain-server-seq, or
// of the last interval of a MySQL GTID set.
func gtidSeq(t *testing.T, gtid string) uint64 {
	t.Helper()
	i := strings.LastIndexAny(gtid, "-:")
	n, err := strconv.ParseUint(gtid[i+1:], 10, 64)
	if err != nil {
		t.Fatalf("GTID %q: %v", gtid, err)
	}
	return n
}

// frontierPast: frontier (a GTID position) holds a sequence at or past
// seq in gtid's domain and server (MariaDB), or contains its last
// interval's end (MySQL).
func frontierPast(frontier, gtid string, seq uint64) bool {
	i := strings.LastIndexAny(gtid, "-:")
	prefix := gtid[:i+1]
	for _, part := range strings.Split(frontier, ",") {
		part = strings.TrimSpace(part)
		if rest, ok := strings.CutPrefix(part, prefix); ok {
			if n, err := strconv.ParseUint(rest, 10, 64); err == nil && n >= seq {
				return true
			}
			// MySQL: uuid:1-N
			if j := strings.LastIndex(rest, "-"); j >= 0 {
				if n, err := strconv.ParseUint(rest[j+1:], 10, 64); err == nil && n >= seq {
					return true
				}
			}
		}
	}
	return false
}
