package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/preflight"
)

// runCheck validates the config against the live source, broker and
// sinks, prints every finding (problems with their fix) and exits 1 when
// any is an error.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check")
	var common commonFlags
	common.register(fs)
	quiet := fs.Bool("q", false, "print only problems and warnings")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	cfg, err := config.Load(common.configPath, os.Environ())
	if err != nil {
		// Config errors are check's first findings, not a usage error.
		fmt.Fprintf(stdout, "ERROR   config       %v\n", strings.ReplaceAll(err.Error(), "\n", "\n                     "))
		fmt.Fprintln(stdout, "\nreadside check: the config does not load; fix it first (docs/config.md lists every key)")
		return exitProblem
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var findings []preflight.Finding
	for _, f := range cdc.CheckSource(ctx, cfg) {
		findings = append(findings, preflight.Finding{Area: "source", Finding: f})
	}
	findings = append(findings, preflight.Broker(ctx, cfg)...)
	findings = append(findings, preflight.Sinks(ctx, cfg)...)
	if len(cfg.Projections) > 0 {
		planned, err := planProjections(ctx, cfg)
		if err != nil {
			for _, e := range strings.Split(err.Error(), "\n") {
				findings = append(findings, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "error", What: e, Fix: "fix the declaration in projections: (docs/config.md); `readside plan` shows the read tables"}})
			}
		} else {
			findings = append(findings, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "ok", What: fmt.Sprintf("%d projection(s) compile and plan against the source schema", len(planned))}})
		}
	}
	errs, warns := 0, 0
	for _, f := range findings {
		label := map[string]string{"error": "ERROR", "warning": "WARNING", "ok": "ok"}[f.Severity]
		switch f.Severity {
		case "error":
			errs++
		case "warning":
			warns++
		case "ok":
			if *quiet {
				continue
			}
		}
		fmt.Fprintf(stdout, "%-7s %-12s %s\n", label, f.Area, f.What)
		if f.Fix != "" {
			fmt.Fprintf(stdout, "%-7s %-12s fix: %s\n", "", "", f.Fix)
		}
	}
	fmt.Fprintf(stdout, "\nreadside check: %d problem(s), %d warning(s)\n", errs, warns)
	if errs > 0 {
		return exitProblem
	}
	return exitOK
}
