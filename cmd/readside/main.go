// Command readside tails a MySQL/MariaDB binlog into Kafka and keeps read
// models in MySQL up to date. See README.md and docs/ for the whole story.
//
// main only wires: it parses the verb and flags and hands off to the
// packages that do the work.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// Exit codes, documented in docs/operations.md ("Exit codes").
const (
	exitOK      = 0
	exitProblem = 1 // the command ran and found a problem (drift, check failures)
	exitUsage   = 2 // bad invocation or an error before the work could start
)

// version and commit are set by the Makefile with -ldflags -X.
var (
	version = "dev"
	commit  = ""
)

type verb struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func verbs() []verb {
	return []verb{
		{"run", "the daemon: tail, publish and project", runDaemon},
		{"check", "validate the config against the live source, broker and sinks", runCheck},
		{"plan", "print (or --apply) the DDL of every read table", runPlan},
		{"snapshot", "online, lock-free snapshot of existing rows into the topics", runSnapshot},
		{"replay", "re-apply history to a projection, or --rebuild it", runReplay},
		{"verify", "compare a read table with what the source implies (--repair fixes it)", runVerify},
		{"status", "positions, lag and health per projection", runStatus},
		{"version", "print version, commit and Go version", runVersion},
	}
}

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, v := range verbs() {
		if v.name == args[0] {
			return v.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "readside: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: readside <command> [-c config.yaml] [flags]")
	fmt.Fprintln(w)
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %-9s %s\n", v.name, v.summary)
	}
}

func runVersion(_ []string, stdout, _ io.Writer) int {
	c := commit
	if c == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	fmt.Fprintf(stdout, "readside %s (commit %s, %s %s/%s)\n", version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
