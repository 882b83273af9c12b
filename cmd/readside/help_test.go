package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/help/*.golden with what the code prints now")

// TestVerbHelp: every verb's --help (and -h, and `readside help <verb>`)
// exits 0 with the help on stdout: the one-line description first, each
// flag once (-c and --config on one line), an example, nothing wider than
// 100 columns, and exactly testdata/help/<verb>.golden (-update rewrites).
func TestVerbHelp(t *testing.T) {
	flagToken := regexp.MustCompile(`(?:^|[ ,])(--?[a-z][a-z0-9-]*)`)
	for _, v := range verbs() {
		for _, args := range [][]string{{v.name, "--help"}, {v.name, "-h"}, {"help", v.name}} {
			var out, errb bytes.Buffer
			if code := dispatch(args, &out, &errb); code != exitOK {
				t.Errorf("%v: exit %d, want 0; stderr %q", args, code, errb.String())
			}
			if errb.Len() > 0 {
				t.Errorf("%v: help belongs on stdout, stderr has %q", args, errb.String())
			}
			help := out.String()
			lines := strings.Split(help, "\n")
			if want := "readside " + v.name + ": " + v.summary; lines[0] != want {
				t.Errorf("%v: first line %q, want the description %q", args, lines[0], want)
			}
			seen := map[string]bool{}
			inFlags := false
			for _, l := range lines {
				if len(l) > helpWidth {
					t.Errorf("%v: line of %d columns: %q", args, len(l), l)
				}
				switch {
				case l == "flags:":
					inFlags = true
					continue
				case l == "" || !strings.HasPrefix(l, " "):
					inFlags = false
				}
				if inFlags && strings.HasPrefix(strings.TrimSpace(l), "-") {
					spec, _, _ := strings.Cut(strings.TrimSpace(l), "  ")
					for _, m := range flagToken.FindAllStringSubmatch(spec, -1) {
						if seen[m[1]] {
							t.Errorf("%v: flag %s listed twice", args, m[1])
						}
						seen[m[1]] = true
					}
				}
			}
			if v.name != "version" && !strings.Contains(help, "\n  -c, --config FILE ") {
				t.Errorf("%v: no \"-c, --config FILE\" line:\n%s", args, help)
			}
			if !strings.Contains(help, "\nexample:\n  readside "+v.name) {
				t.Errorf("%v: no example:\n%s", args, help)
			}
			golden := filepath.Join("testdata", "help", v.name+".golden")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with go test ./cmd/readside -run TestVerbHelp -update)", err)
			}
			if help != string(want) {
				t.Errorf("%v: help differs from %s (rerun with -update if intended):\ngot:\n%s", args, golden, help)
			}
		}
	}
}

// TestUsage: the command list and the ways a command line goes wrong.
func TestUsage(t *testing.T) {
	cases := []struct {
		why      string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"--help lists the commands on stdout", []string{"--help"}, exitOK, "  status    positions, lag and health", ""},
		{"-h is --help", []string{"-h"}, exitOK, "  replay    re-apply history", ""},
		{"help is --help", []string{"help"}, exitOK, "Run 'readside <command> --help'", ""},
		{"no command is a usage error, on stderr", nil, exitUsage, "", "commands:\n  run "},
		{"an unknown command names itself", []string{"frobnicate"}, exitUsage, "", `readside: unknown command "frobnicate"`},
		{"help for an unknown command names it", []string{"help", "frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"a flag before the command says where flags go", []string{"-c", "x.yaml", "run"}, exitUsage, "", "flags follow the command"},
		{"an unknown flag names itself and the way to help", []string{"run", "--bogus"}, exitUsage, "", "readside run: flag provided but not defined: -bogus\nrun 'readside run --help' for its flags"},
		{"a flag without its value is named", []string{"status", "--http"}, exitUsage, "", "readside status: flag needs an argument: -http"},
		{"a stray argument is named", []string{"check", "readside.yaml"}, exitUsage, "", `readside check: unexpected argument "readside.yaml"`},
		{"version takes no arguments", []string{"version", "now"}, exitUsage, "", `readside version: unexpected argument "now"`},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := dispatch(c.args, &out, &errb); code != c.code {
			t.Errorf("%s: exit %d, want %d", c.why, code, c.code)
		}
		if !strings.Contains(out.String(), c.inStdout) || !strings.Contains(errb.String(), c.inStderr) {
			t.Errorf("%s: stdout %q stderr %q", c.why, out.String(), errb.String())
		}
	}
	var out bytes.Buffer
	dispatch([]string{"--help"}, &out, &out)
	for _, v := range verbs() {
		if !strings.Contains(out.String(), "\n  "+v.name+" ") {
			t.Errorf("readside --help does not list %s", v.name)
		}
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if len(l) > helpWidth {
			t.Errorf("readside --help: line of %d columns: %q", len(l), l)
		}
	}
}
