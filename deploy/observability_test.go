package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const (
	alertsFile     = "prometheus/alerts.yaml"
	alertTestsFile = "prometheus/alerts_test.yaml"
	dashboardFile  = "grafana/readside.json"
	runbookFile    = "prometheus/RUNBOOK.md"
	runbookLink    = "deploy/prometheus/RUNBOOK.md"
	metricsDoc     = "../docs/metrics.md"
)

type rule struct {
	group string
	m     map[string]any
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	doc := yamlDoc(t, alertsFile)
	for k := range doc {
		if k != "groups" {
			t.Errorf("%s: unknown top-level key %q (a rules file has only groups)", alertsFile, k)
		}
	}
	var out []rule
	groups := list(doc, "groups")
	if len(groups) == 0 {
		t.Fatalf("%s: no groups", alertsFile)
	}
	seen := map[string]bool{}
	for i, g := range groups {
		name := str(g, "name")
		if name == "" || seen[name] {
			t.Errorf("%s: group %d has an empty or repeated name %q", alertsFile, i, name)
		}
		seen[name] = true
		rules := list(g, "rules")
		if len(rules) == 0 {
			t.Errorf("%s: group %s has no rules", alertsFile, name)
		}
		for _, r := range rules {
			m, ok := r.(map[string]any)
			if !ok {
				t.Fatalf("%s: group %s: a rule is %T, want a mapping", alertsFile, name, r)
			}
			out = append(out, rule{name, m})
		}
	}
	return out
}

// promDuration is Prometheus' duration syntax, e.g. 5m, 1h30m.
var promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)

func TestAlertRules(t *testing.T) {
	sections := runbookSections(t, runbookFile)
	names := map[string]bool{}
	for _, r := range alertRules(t) {
		name := str(r.m, "alert")
		where := alertsFile + ": " + r.group + "/" + name
		if !regexp.MustCompile(`^Readside[A-Z][A-Za-z0-9]+$`).MatchString(name) {
			t.Errorf("%s: alert name %q: want ReadsideSomething", where, name)
		}
		if names[name] {
			t.Errorf("%s: alert %s defined twice", where, name)
		}
		names[name] = true
		for k := range r.m {
			if !slices.Contains([]string{"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, k) {
				t.Errorf("%s: unknown key %q in an alerting rule", where, k)
			}
		}
		if strings.TrimSpace(str(r.m, "expr")) == "" {
			t.Errorf("%s: empty expr", where)
		}
		if f, ok := r.m["for"]; ok {
			if s, _ := f.(string); !promDuration.MatchString(s) {
				t.Errorf("%s: for %v is not a Prometheus duration", where, f)
			}
		}
		if sev := str(r.m, "labels", "severity"); sev != "warning" && sev != "critical" {
			t.Errorf("%s: labels.severity %q: want warning or critical", where, sev)
		}
		for _, a := range []string{"summary", "description", "runbook"} {
			if str(r.m, "annotations", a) == "" {
				t.Errorf("%s: annotations.%s is empty", where, a)
			}
		}
		// The runbook sits beside the rules: the annotation is its
		// repository path and a heading's anchor, and that section names
		// the alert, so an operator following the link reads about this
		// alert and not a neighbour's.
		doc, anchor, _ := strings.Cut(str(r.m, "annotations", "runbook"), "#")
		section, ok := sections[anchor]
		switch {
		case doc != runbookLink || !ok:
			t.Errorf("%s: runbook %q: want %s#<a heading there>", where, str(r.m, "annotations", "runbook"), runbookLink)
		case !strings.Contains(section, name):
			t.Errorf("%s: runbook %q: the section does not name %s; say there what this alert means", where, str(r.m, "annotations", "runbook"), name)
		}
	}
	// What the alerts must watch (SPEC.md, Observability).
	exprs := alertExprs(t)
	for _, m := range []string{"up", "readside_source_lag_seconds", "readside_source_binlog_purge_seconds",
		"readside_projection_lag_seconds", "readside_projection_dead_letters_total",
		"readside_tailer_errors_total", "readside_projection_errors_total",
		"readside_projection_stopped", "readside_projection_all_dead_lettered"} {
		if !regexp.MustCompile(`\b` + m + `\b`).MatchString(exprs) {
			t.Errorf("no alert watches %s", m)
		}
	}
	// Every alert has a promtool test case.
	tested := map[string]bool{}
	for _, tc := range list(yamlDoc(t, alertTestsFile), "tests") {
		for _, a := range list(tc, "alert_rule_test") {
			tested[str(a, "alertname")] = true
		}
	}
	for name := range names {
		if !tested[name] {
			t.Errorf("alert %s has no case in %s", name, alertTestsFile)
		}
	}
	for name := range tested {
		if !names[name] {
			t.Errorf("%s tests alert %s, which %s does not define", alertTestsFile, name, alertsFile)
		}
	}
}

func alertExprs(t *testing.T) string {
	var b strings.Builder
	for _, r := range alertRules(t) {
		b.WriteString(str(r.m, "expr") + "\n")
	}
	return b.String()
}

// runbookSections returns a Markdown file's sections by the GitHub anchor
// of their heading: the heading line and the text up to the next heading.
func runbookSections(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	anchor := ""
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			anchor = strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		}
		out[anchor] += line + "\n"
	}
	return out
}

type dashboard struct {
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// dashboardExprs is every PromQL query of the dashboard, variables included.
func dashboardExprs(d dashboard) string {
	var b strings.Builder
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			b.WriteString(tg.Expr + "\n")
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			s, _ := q["query"].(string)
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	ids := map[int]bool{}
	varRef := regexp.MustCompile(`\$\{?(\w+)`)
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q is wider than the 24-column grid", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want the ${datasource} variable and at least one target", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" {
				t.Errorf("panel %q: a target without expr or refId", p.Title)
			}
		}
	}
	for _, m := range varRef.FindAllStringSubmatch(dashboardExprs(d), -1) {
		if !strings.HasPrefix(m[1], "__") && !vars[m[1]] {
			t.Errorf("a query uses $%s, which is not a dashboard variable", m[1])
		}
	}
	// What the dashboard must show (SPEC.md, Observability).
	exprs := dashboardExprs(d)
	for _, m := range []string{"readside_source_events_total", "readside_source_lag_seconds",
		"readside_source_binlog_purge_seconds", "readside_produce_commit_seconds_bucket",
		"readside_projection_applied_rows_total", "readside_projection_stale_skipped_total",
		"readside_projection_lag_seconds", "readside_projection_batch_seconds_bucket",
		"readside_projection_consumer_lag", "readside_projection_dead_letters_total",
		"readside_tailer_errors_total", "readside_projection_errors_total", "process_resident_memory_bytes",
		"readside_sink_frontier_source_timestamp_seconds", "readside_sink_commits_total", "readside_sink_commit_failures_total",
		"readside_sink_commit_phase_seconds_sum", "readside_sink_commit_cut_age_seconds_sum"} {
		if !regexp.MustCompile(`\b` + m + `\b`).MatchString(exprs) {
			t.Errorf("no dashboard panel queries %s", m)
		}
	}
}

// documentedMetrics reads the metric tables of docs/metrics.md: name -> type.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(readside_[a-z0-9_]+)` \\| (\\w+) \\|").FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatalf("%s: no metric table rows found", metricsDoc)
	}
	return out
}

// TestMetricNamesDocumented: every readside_* name the alerts, their tests
// and the dashboard query is in docs/metrics.md (histogram series by their
// base name), so a renamed metric cannot leave a silent panel or an alert
// that never fires.
func TestMetricNamesDocumented(t *testing.T) {
	documented := documentedMetrics(t)
	var tests strings.Builder
	for _, tc := range list(yamlDoc(t, alertTestsFile), "tests") {
		for _, s := range list(tc, "input_series") {
			tests.WriteString(str(s, "series") + "\n")
		}
	}
	name := regexp.MustCompile(`\breadside_[a-z0-9_]*[a-z0-9]\b`)
	for _, src := range []struct{ file, text string }{
		{alertsFile, alertExprs(t)}, {alertTestsFile, tests.String()}, {dashboardFile, dashboardExprs(loadDashboard(t))},
	} {
		found := name.FindAllString(src.text, -1)
		if len(found) == 0 {
			t.Errorf("%s: no readside_ metric found; the extraction is broken", src.file)
		}
		var missing []string
		for _, m := range found {
			if _, ok := documented[m]; ok {
				continue
			}
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if documented[base] == "histogram" {
				continue
			}
			if !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
		sort.Strings(missing)
		for _, m := range missing {
			t.Errorf("%s uses %s, which docs/metrics.md does not list", src.file, m)
		}
	}
}

// TestPromtool checks the rules and runs their unit tests with promtool
// (Debian package prometheus) when it is installed.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus); rules checked structurally only")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
