package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/preflight"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// runCheck validates the config against the live source, broker and
// sinks, prints every finding (problems with their fix) and exits 1 when
// any is an error.
func runCheck(args []string, stdout, stderr io.Writer) int {
	c := newCommand("check", stdout, stderr)
	quiet := c.fs.Bool("q", false, "print only problems and warnings")
	if code, done := c.parse(args); done {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	cfg, err := c.load()
	var findings []preflight.Finding
	if err != nil {
		// Config errors are check's first findings, not a usage error.
		var invalid *config.Invalid
		if !errors.As(err, &invalid) {
			fmt.Fprintf(stdout, "ERROR   config       %v\n", strings.ReplaceAll(err.Error(), "\n", "\n                     "))
			fmt.Fprintln(stdout, "\nreadside check: the config does not load; fix it first (docs/config.md lists every key)")
			return exitProblem
		}
		// It decodes but does not validate: every problem is listed, and
		// the projections are still checked (their declarations, and the
		// source schema when source.dsn is usable); the servers are
		// checked once the config validates.
		for _, e := range unjoin(invalid.Err) {
			findings = append(findings, preflight.Finding{Area: "config", Finding: cdc.Finding{Severity: "error", What: e.Error()}})
		}
		findings = append(findings, projectionFindings(ctx, invalid.Config, false)...)
		return printFindings(stdout, findings, *quiet, "the source, broker and sinks are checked once the config validates (docs/config.md lists every key)")
	}
	for _, f := range cdc.CheckSource(ctx, cfg) {
		findings = append(findings, preflight.Finding{Area: "source", Finding: f})
	}
	findings = append(findings, preflight.Broker(ctx, cfg.Kafka, cfg.DataDir)...)
	findings = append(findings, preflight.Registry(ctx, cfg)...)
	findings = append(findings, addedTableFindings(ctx, cfg)...)
	findings = append(findings, preflight.Sinks(ctx, cfg.Sinks)...)
	findings = append(findings, projectionFindings(ctx, cfg, true)...)
	findings = append(findings, inputTopicFindings(ctx, cfg)...)
	return printFindings(stdout, findings, *quiet, "")
}

// projectionFindings are every problem of every projection in one run
// (checkProjections), then, with drift, each planned projection's read
// tables compared with its plan on the sink.
func projectionFindings(ctx context.Context, cfg config.Config, drift bool) []preflight.Finding {
	if len(cfg.Projections) == 0 {
		return nil
	}
	var out []preflight.Finding
	planned, problems := checkProjections(ctx, cfg)
	for _, e := range problems {
		what, fix, own := strings.Cut(e.Error(), "; fix: ")
		if !own {
			// A declaration's problem: the message says what is wrong.
			fix = "fix the declaration in projections: (docs/config.md); `readside plan` shows the read tables"
		}
		out = append(out, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "error", What: what, Fix: fix}})
	}
	out = append(out, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "ok", What: fmt.Sprintf("%d of %d projection(s) compile and plan against the source schema", len(planned), len(cfg.Projections))}})
	if drift {
		out = append(out, driftFindings(ctx, cfg, planned)...)
	}
	return out
}

// printFindings prints findings (with quiet, only problems and warnings)
// and the summary, with note after it when set, and returns the exit
// code: 1 when any finding is an error.
func printFindings(stdout io.Writer, findings []preflight.Finding, quiet bool, note string) int {
	errs, warns := 0, 0
	for _, f := range findings {
		label := map[string]string{"error": "ERROR", "warning": "WARNING", "ok": "ok"}[f.Severity]
		switch f.Severity {
		case "error":
			errs++
		case "warning":
			warns++
		case "ok":
			if quiet {
				continue
			}
		}
		fmt.Fprintf(stdout, "%-7s %-12s %s\n", label, f.Area, f.What)
		if f.Fix != "" {
			fmt.Fprintf(stdout, "%-7s %-12s fix: %s\n", "", "", f.Fix)
		}
	}
	fmt.Fprintf(stdout, "\nreadside check: %d problem(s), %d warning(s)\n", errs, warns)
	if note != "" {
		fmt.Fprintf(stdout, "readside check: %s\n", note)
	}
	if errs > 0 {
		return exitProblem
	}
	return exitOK
}

// driftFindings compares every existing read table and join state table
// with its plan: each difference is an error naming the ALTER that closes
// it (or the rebuild, when the ALTER could lose values); a column no
// longer declared that rows can do without is a warning. A sink out of
// reach is preflight's finding already.
func driftFindings(ctx context.Context, cfg config.Config, planned []plannedProjection) []preflight.Finding {
	var out []preflight.Finding
	for _, pp := range planned {
		// The sink that serves the projection now (a reshard may have
		// moved it off the one the config names).
		at, closeSinks, err := sinks.OpenResolved(ctx, cfg.Sinks, pp.p)
		if err != nil {
			closeSinks()
			if f, ok := routingFinding(pp.p.Name, err); ok {
				out = append(out, f)
			}
			continue
		}
		sink := at.Sink
		if err := sink.CheckChildren(pp.p); err != nil {
			out = append(out, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "error", What: err.Error(), Fix: "put projection " + pp.p.Name + " on a MariaDB sink (docs/config.md, children)"}})
		}
		dropped, err := sink.DroppedReadTable(ctx, pp.p, cfg.Sinks[pp.p.Sink].Consistency.Transactional())
		if err == nil && dropped != nil {
			out = append(out, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "error", What: dropped.Error(), Fix: dropped.Fix()}})
		}
		drifts, err := sink.Drifts(ctx, pp.p, pp.types)
		closeSinks()
		if err != nil {
			out = append(out, preflight.Finding{Area: "projections", Finding: cdc.Finding{Severity: "error", What: fmt.Sprintf("projection %s: %v", pp.p.Name, err), Fix: "grant the sink user SELECT on its database"}})
			continue
		}
		for _, d := range drifts {
			kind := "read table"
			if d.Table != pp.p.Table {
				kind = "join state table"
			}
			f := cdc.Finding{Severity: "error", What: fmt.Sprintf("projection %s: %s %s column %s no longer fits the plan: %s (sink: %s; planned: %s)",
				pp.p.Name, kind, d.Table, d.Column, d.Why, orNone(d.Existing), orNone(d.Planned))}
			switch {
			case d.Safe:
				f.Fix = "readside plan --apply, which runs " + d.Alter + ";"
			case d.Harmless:
				f.Severity = "warning"
				f.Fix = "once nothing reads it: " + d.Alter + ";"
			default:
				f.Fix = fmt.Sprintf("%s (%s; could lose values)", pp.p.RebuildHow(), d.Alter)
			}
			out = append(out, preflight.Finding{Area: "projections", Finding: f})
		}
	}
	return out
}

func orNone(def string) string {
	if def == "" {
		return "none"
	}
	return def
}

// inputTopicFindings are the Debezium connector's topics the projections
// read that the broker does not have (inputtopics.go): an error when the
// broker has the table's topic under another prefix, a warning when it
// has none (the connector may not have written the table yet). A broker
// out of reach is preflight's finding already.
func inputTopicFindings(ctx context.Context, cfg config.Config) []preflight.Finding {
	ps, err := projections.Compile(cfg)
	if err != nil {
		return nil // the projections' findings say why
	}
	missing, err := missingInputTopics(ctx, cfg, ps)
	if err != nil {
		return nil
	}
	var out []preflight.Finding
	for _, m := range missing {
		sev := "warning"
		if len(m.elsewhere) > 0 {
			sev = "error"
		}
		out = append(out, preflight.Finding{Area: "input", Finding: cdc.Finding{Severity: sev, What: m.what(cfg.Input.TopicPrefix), Fix: m.fix()}})
	}
	return out
}
