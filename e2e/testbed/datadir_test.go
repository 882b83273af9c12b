package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeInstallDB is a mariadb-install-db that writes one data file and
// counts its runs in runs; with fail set it exits 1.
func fakeInstallDB(t *testing.T, runs string, fail bool) string {
	t.Helper()
	script := `#!/bin/sh
echo run >> ` + runs + `
for a in "$@"; do case "$a" in --datadir=*) d="${a#--datadir=}";; esac; done
`
	if fail {
		script += "echo broken >&2; exit 1\n"
	} else {
		script += `mkdir -p "$d/mysql" && echo table > "$d/mysql/user.frm"` + "\n"
	}
	path := filepath.Join(t.TempDir(), "mariadb-install-db")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInstallDataDir(t *testing.T) {
	cases := []struct {
		why      string
		servers  int
		fail     bool
		stale    bool // an incomplete template is in the cache
		wantRuns int
		wantErr  string
	}{
		{"the first server installs the template, the rest copy it", 3, false, false, 1, ""},
		{"a template without its completion mark is not copied but installed again", 2, false, true, 1, ""},
		{"a failing install is reported with its output, after the direct install is tried too", 1, true, false, 2, "broken"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.why, " ", "_"), func(t *testing.T) {
			t.Setenv("XDG_CACHE_HOME", t.TempDir())
			runs := filepath.Join(t.TempDir(), "runs")
			installDB := fakeInstallDB(t, runs, c.fail)
			if c.stale {
				tmpl, err := dataDirTemplate(t.Context(), installDB, installDB, installArgs())
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(filepath.Dir(tmpl), "complete")); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(runs); err != nil {
					t.Fatal(err)
				}
			}
			for i := range c.servers {
				dir := t.TempDir()
				err := installDataDir(t.Context(), installDB, installDB, filepath.Join(dir, "data"), dir)
				if c.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("server %d: error %v, want one with %q", i, err, c.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("server %d: %v", i, err)
				}
				if b, err := os.ReadFile(filepath.Join(dir, "data", "mysql", "user.frm")); err != nil || string(b) != "table\n" {
					t.Fatalf("server %d: the data dir lacks the installed file: %q %v", i, b, err)
				}
			}
			b, _ := os.ReadFile(runs)
			if n := strings.Count(string(b), "run"); n != c.wantRuns {
				t.Errorf("mariadb-install-db ran %d times, want %d", n, c.wantRuns)
			}
		})
	}
}
