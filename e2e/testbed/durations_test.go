package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecordTime(t *testing.T) {
	cases := []struct {
		why   string
		gets  int // how often the test calls Get (recordTime)
		sleep time.Duration
		lines int // lines the test appends
	}{
		{"a test that never gets the bed has no time", 0, 0, 0},
		{"one Get: one line, with the time the test took after it", 1, 300 * time.Millisecond, 1},
		{"helpers that call Get again must not add lines", 3, 0, 1},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.why, " ", "_"), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "times")
			t.Setenv(TimesEnv, path)
			var name string
			t.Run("measured", func(t *testing.T) {
				name = t.Name()
				for range c.gets {
					recordTime(t)
				}
				time.Sleep(c.sleep)
			})
			data, err := os.ReadFile(path)
			if c.lines == 0 {
				if !os.IsNotExist(err) {
					t.Fatalf("times file written (%v): %q", err, data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if len(lines) != c.lines {
				t.Fatalf("%d lines, want %d: %q", len(lines), c.lines, data)
			}
			f := strings.Split(lines[0], "\t")
			if len(f) != 3 || f[2] != name {
				t.Fatalf("line %q: want seconds, package and %s, tab-separated", lines[0], name)
			}
			if sec, err := time.ParseDuration(f[0] + "s"); err != nil || sec < c.sleep {
				t.Errorf("seconds %q: want at least the test's %s (%v)", f[0], c.sleep, err)
			}
			// The package is relative to the times file's directory, as
			// `make e2e` shows it: here the file is elsewhere, so the path
			// climbs out of it to this package's directory.
			if !strings.HasSuffix(f[1], filepath.Join("e2e", "testbed")) {
				t.Errorf("package %q: want a path ending in e2e/testbed", f[1])
			}
		})
	}
}
