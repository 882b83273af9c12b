package cdc

import (
	"fmt"
	"os"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestCompressedBinlog: MariaDB with log_bin_compress=ON writes
// *_ROWS_COMPRESSED_EVENT_V1 events; the type matrix decodes from them
// exactly as from uncompressed ones (the source's own values).
func TestCompressedBinlog(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs a private MariaDB")
	}
	dir, err := os.MkdirTemp("", "readside-compressed-src-")
	if err != nil {
		t.Fatal(err)
	}
	src, err := testbed.StartMariaDBWith(t.Context(), dir, testbed.MariaDBOptions{
		Args: []string{"--log-bin-compress=ON", "--log-bin-compress-min-len=10"}})
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("closing the compressed source: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	testTypeMatrix(t, bed, src)

	// The events really were compressed.
	kinds := map[string]int{}
	rows, err := src.DB().QueryContext(t.Context(), "SHOW BINLOG EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := scanRaw(rows)
		if err != nil {
			t.Fatal(err)
		}
		kinds[string(vals[2])]++
	}
	for _, k := range []string{"Write_rows_compressed_v1", "Update_rows_compressed_v1", "Delete_rows_compressed_v1"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event in the binlog (%v): the test did not exercise compressed rows", k, fmt.Sprint(kinds))
		}
	}
}
