package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// WaitForTailer waits until the tailer capturing src has committed a
// checkpoint to checkpointTopic, so writes made after it returns are
// captured: until then the tailer may still be choosing where to start.
func WaitForTailer(t testing.TB, src *MySQL, brokers []string, checkpointTopic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(checkpointTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	Eventually(t, 90*time.Second, func() (bool, string) {
		// A write to a table nobody captures makes the tailer commit a
		// checkpoint of its own, so an idle source still gets one.
		if err := src.Exec(t.Context(), "CREATE DATABASE IF NOT EXISTS rs_ping",
			"CREATE TABLE IF NOT EXISTS rs_ping.p (id INT PRIMARY KEY, n INT)", "REPLACE INTO rs_ping.p VALUES (1, 1)"); err != nil {
			return false, "writing to the source: " + err.Error()
		}
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		return cl.PollRecords(ctx, 1).NumRecords() > 0, "the tailer wrote no checkpoint to " + checkpointTopic
	})
}
