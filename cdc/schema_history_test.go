package cdc

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestSchemaHistoryWithoutFullMetadata: on a source whose binlog does not
// name columns (binlog_row_metadata=MINIMAL, then MariaDB's default
// NO_LOG), the DDL sequence of TestDDLMidStream (mid-stream and while the
// tailer is stopped) and the type matrix decode exactly as with FULL
// metadata: names, primary keys, ENUM/SET members and unsigned integers
// come from the schema history.
func TestSchemaHistoryWithoutFullMetadata(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	dir, err := os.MkdirTemp("", "readside-minimal-src-")
	if err != nil {
		t.Fatal(err)
	}
	src, err := testbed.StartMariaDBWith(t.Context(), dir, testbed.MariaDBOptions{Args: []string{"--binlog-row-metadata=MINIMAL"}})
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("closing the MINIMAL source: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"MINIMAL", "NO_LOG"} {
		if err := src.Exec(t.Context(), "SET GLOBAL binlog_row_metadata = "+level); err != nil {
			t.Fatal(err)
		}
		t.Run(level+"/ddl", func(t *testing.T) {
			testDDLMidStream(t, bed, src)
			expectHistory(t, bed)
		})
		t.Run(level+"/types", func(t *testing.T) {
			testTypeMatrix(t, bed, src)
			expectHistory(t, bed)
		})
	}
}

// expectHistory checks the tailer of this test really kept a schema
// history (and did not get names from the binlog after all).
func expectHistory(t *testing.T, bed *testbed.Bed) {
	t.Helper()
	topic := SchemaHistoryTopic("t" + strings.ReplaceAll(t.Name(), "/", "_"))
	cons := newConsumer(t, bed, topic)
	if recs := pollOnce(cons, 5*time.Second); len(recs) == 0 {
		// pollOnce decodes change envelopes; history records are not
		// envelopes, so count raw records.
		ctx, cancel := contextWithTimeout(t, 10*time.Second)
		defer cancel()
		if n := cons.cl.PollFetches(ctx).NumRecords(); n == 0 {
			t.Errorf("no records in %s: the tailer did not track the schema", topic)
		}
	}
}
