package chartcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/readside/readside/config"
)

const chartDir = "../readside"

// object is one rendered Kubernetes object, as JSON decodes it.
type object = map[string]any

// at walks v by map keys (string) and list indexes (int); nil when absent.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, path ...any) string { s, _ := at(v, path...).(string); return s }

// render is `helm template r deploy/helm/readside` with vals over the
// chart's values, split into objects.
func render(vals map[string]any) ([]object, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.DryRunOption, install.ClientOnly, install.Replace = true, "true", true, true
	install.ReleaseName, install.Namespace = "r", "readside"
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	var objs []object
	for _, doc := range strings.Split(rel.Manifest, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("rendered YAML does not parse: %w\n%s", err, doc)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func byKind(objs []object, kind string) map[string]object {
	out := map[string]object{}
	for _, o := range objs {
		if o["kind"] == kind {
			out[str(o, "metadata", "name")] = o
		}
	}
	return out
}

// TestLintAndTemplate runs helm lint (strict: warnings fail) and helm
// template for each set of values and checks the objects: the Deployments
// each layout asks for, their probes, port, config and DSN mounts, the
// config loading with readside's own loader, the Service and the
// ServiceMonitor.
func TestLintAndTemplate(t *testing.T) {
	cases := []struct {
		why     string
		vals    map[string]any
		deploys map[string]int // Deployment name -> replicas
		roles   map[string]string
		secret  string // the DSN Secret's name; created by the chart when it starts with r-
		monitor bool
	}{
		{"the defaults: one pod running the whole pipeline", nil,
			map[string]int{"r-readside": 1}, map[string]string{"r-readside": "all"}, "r-readside-dsn", false},
		{"split: one tailer, projectors that scale; and a ServiceMonitor",
			map[string]any{"split": true, "serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}},
			map[string]int{"r-readside-tailer": 1, "r-readside-projector": 3},
			map[string]string{"r-readside-tailer": "tailer", "r-readside-projector": "projector"}, "r-readside-dsn", true},
		{"an existing Secret is mounted and none is created; projector replicas follow the values",
			map[string]any{"split": true, "projector": map[string]any{"replicas": 5}, "secret": map[string]any{"existingSecret": "shop-dsn"}},
			map[string]int{"r-readside-tailer": 1, "r-readside-projector": 5},
			map[string]string{"r-readside-tailer": "tailer", "r-readside-projector": "projector"}, "shop-dsn", false},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			res := lint.Run([]string{chartDir}, c.vals)
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
			if len(res.Errors) > 0 {
				t.Errorf("helm lint: %v", res.Errors)
			}
			objs, err := render(c.vals)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			cms := byKind(objs, "ConfigMap")
			cm, ok := cms["r-readside-config"]
			if !ok || len(cms) != 1 {
				t.Fatalf("ConfigMaps %v, want r-readside-config", slices.Collect(mapsKeys(cms)))
			}
			secrets := byKind(objs, "Secret")
			if created := strings.HasPrefix(c.secret, "r-"); created != (len(secrets) == 1) || (created && secrets[c.secret] == nil) {
				t.Errorf("Secrets rendered %v, want %q created: %v", slices.Collect(mapsKeys(secrets)), c.secret, created)
			}
			deploys := byKind(objs, "Deployment")
			if len(deploys) != len(c.deploys) {
				t.Errorf("Deployments %v, want %v", slices.Collect(mapsKeys(deploys)), c.deploys)
			}
			for name, replicas := range c.deploys {
				d, ok := deploys[name]
				if !ok {
					t.Errorf("no Deployment %s", name)
					continue
				}
				checkDeployment(t, d, c.roles[name], replicas, c.secret)
			}
			checkService(t, byKind(objs, "Service"), deploys)
			sms := byKind(objs, "ServiceMonitor")
			if c.monitor != (len(sms) == 1) {
				t.Errorf("%d ServiceMonitors, want one: %v", len(sms), c.monitor)
			}
			for _, sm := range sms {
				if str(sm, "spec", "endpoints", 0, "port") != "http" || str(sm, "spec", "endpoints", 0, "path") != "/metrics" {
					t.Errorf("the ServiceMonitor does not scrape /metrics on the port named http: %v", at(sm, "spec", "endpoints"))
				}
				if str(sm, "spec", "jobLabel") != "app.kubernetes.io/name" {
					t.Errorf("the ServiceMonitor's job is not readside (jobLabel app.kubernetes.io/name), which the alerts expect")
				}
				if str(sm, "metadata", "labels", "release") != "prometheus" {
					t.Errorf("serviceMonitor.labels are not on the ServiceMonitor")
				}
			}
			checkConfigLoads(t, str(cm, "data", "readside.yaml"), secrets[c.secret])
		})
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkDeployment: role, replicas, the strategy a tailer needs, probes on
// /healthz and /readyz at the http port, the config and DSN mounts.
func checkDeployment(t *testing.T, d object, role string, replicas int, secret string) {
	t.Helper()
	name := str(d, "metadata", "name")
	if got := at(d, "spec", "replicas"); got != float64(replicas) {
		t.Errorf("%s: replicas %v, want %d", name, got, replicas)
	}
	strategy := str(d, "spec", "strategy", "type")
	if want := map[bool]string{true: "RollingUpdate", false: "Recreate"}[role == "projector"]; strategy != want {
		t.Errorf("%s: strategy %s, want %s (a tailer's rolling update runs two tailers)", name, strategy, want)
	}
	pod := at(d, "spec", "template")
	labels, _ := at(pod, "metadata", "labels").(map[string]any)
	for k, v := range at(d, "spec", "selector", "matchLabels").(map[string]any) {
		if labels[k] != v {
			t.Errorf("%s: the selector's %s=%v is not on the pod", name, k, v)
		}
	}
	ctr := at(pod, "spec", "containers", 0)
	var args []string
	for _, a := range at(ctr, "args").([]any) {
		args = append(args, a.(string))
	}
	if want := []string{"run", "--role", role, "-c", "/etc/readside/readside.yaml", "--http", ":9100"}; !slices.Equal(args, want) {
		t.Errorf("%s: args %q, want %q", name, args, want)
	}
	if str(ctr, "ports", 0, "name") != "http" || at(ctr, "ports", 0, "containerPort") != float64(9100) {
		t.Errorf("%s: ports %v, want http 9100", name, at(ctr, "ports"))
	}
	for probe, path := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if str(ctr, probe, "httpGet", "path") != path || str(ctr, probe, "httpGet", "port") != "http" {
			t.Errorf("%s: %s %v, want GET %s on http", name, probe, at(ctr, probe), path)
		}
	}
	mounts := map[string]string{}
	for _, m := range at(ctr, "volumeMounts").([]any) {
		mounts[str(m, "mountPath")] = str(m, "name")
	}
	volumes := map[string]any{}
	for _, v := range at(pod, "spec", "volumes").([]any) {
		volumes[str(v, "name")] = v
	}
	if cm := str(volumes[mounts["/etc/readside"]], "configMap", "name"); cm != "r-readside-config" {
		t.Errorf("%s: /etc/readside is not the ConfigMap r-readside-config (%q)", name, cm)
	}
	dsn := volumes[mounts["/var/run/secrets/readside"]]
	if str(dsn, "secret", "secretName") != secret {
		t.Errorf("%s: /var/run/secrets/readside is not the Secret %s: %v", name, secret, dsn)
	}
	if mode := at(dsn, "secret", "defaultMode"); mode != float64(0o440) {
		t.Errorf("%s: the DSN files' mode is %v, want 0440 (readside refuses world-readable DSN files)", name, mode)
	}
	if at(pod, "spec", "securityContext", "fsGroup") != float64(65532) || at(ctr, "securityContext", "readOnlyRootFilesystem") != true {
		t.Errorf("%s: the pod is not fsGroup 65532 with a read-only root file system", name)
	}
}

// checkService: one Service on port http selecting every Deployment's pods.
func checkService(t *testing.T, svcs map[string]object, deploys map[string]object) {
	t.Helper()
	svc, ok := svcs["r-readside"]
	if !ok || len(svcs) != 1 {
		t.Fatalf("Services %v, want r-readside", slices.Collect(mapsKeys(svcs)))
	}
	if str(svc, "spec", "ports", 0, "name") != "http" || at(svc, "spec", "ports", 0, "port") != float64(9100) {
		t.Errorf("the Service's port is %v, want http 9100", at(svc, "spec", "ports"))
	}
	for name, d := range deploys {
		labels, _ := at(d, "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range at(svc, "spec", "selector").(map[string]any) {
			if labels[k] != v {
				t.Errorf("the Service does not select %s's pods (%s=%v)", name, k, v)
			}
		}
	}
}

// checkConfigLoads loads the ConfigMap's readside.yaml with readside's own
// loader, the DSN files written from the Secret (or examples when the
// Secret is not the chart's): unknown keys, YAML 1.1 surprises in the
// values (a bare `on` read as true) and bad DSNs fail here as in the pod.
func checkConfigLoads(t *testing.T, text string, secret object) {
	t.Helper()
	cfg := loadConfig(t, text, secret)
	if len(cfg.Kafka.Brokers) == 0 {
		t.Error("kafka.brokers is empty")
	}
	if len(cfg.Projections) == 0 {
		t.Error("no projection in the chart's config")
	}
}

// loadConfig is config.Load of text, the DSN files written from secret (or
// examples when the Secret is not the chart's) and their paths rewritten.
func loadConfig(t *testing.T, text string, secret object) config.Config {
	t.Helper()
	dir := t.TempDir()
	files := map[string]any{"source-dsn": "repl:x@tcp(mysql:3306)/", "sink-dsn": "projector:x@tcp(mysql:3306)/reads"}
	if secret != nil {
		files = at(secret, "stringData").(map[string]any)
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v.(string)), 0o440); err != nil {
			t.Fatal(err)
		}
	}
	const mount = "/var/run/secrets/readside/"
	path := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, mount, dir+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("the ConfigMap's readside.yaml does not load: %v\n%s", err, text)
	}
	if cfg.Source.DSN == "" || cfg.Sinks["reads"].DSN == "" {
		t.Error("the DSNs were not read from the Secret's files")
	}
	return cfg
}

// TestDefaultsAreTheManifests: the chart's default config is the one of
// deploy/kubernetes/configmap.yaml (loaded, so layout and key order do not
// matter), so the two ways to deploy do not drift apart.
func TestDefaultsAreTheManifests(t *testing.T) {
	objs, err := render(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../kubernetes/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm object
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	secret := byKind(objs, "Secret")["r-readside-dsn"]
	chart := loadConfig(t, str(byKind(objs, "ConfigMap")["r-readside-config"], "data", "readside.yaml"), secret)
	manifests := loadConfig(t, str(cm, "data", "readside.yaml"), secret)
	// The files are the same, written to two temporary directories.
	for _, c := range []*config.Config{&chart, &manifests} {
		c.Source.DSNFile = ""
		for name, sink := range c.Sinks {
			sink.DSNFile = ""
			c.Sinks[name] = sink
		}
	}
	if !reflect.DeepEqual(chart, manifests) {
		t.Errorf("the chart's default config differs from deploy/kubernetes/configmap.yaml's:\nchart:     %+v\nmanifests: %+v", chart, manifests)
	}
}

// TestBadValues: values the chart refuses at render time, each naming the
// value and the fix.
func TestBadValues(t *testing.T) {
	cases := []struct {
		why  string
		vals map[string]any
		want string
	}{
		{"no brokers: the embedded broker cannot run on a read-only root file system",
			map[string]any{"config": map[string]any{"kafka": map[string]any{"brokers": nil}}}, "set config.kafka.brokers"},
		{"an empty DSN in a Secret the chart creates",
			map[string]any{"secret": map[string]any{"dsn": map[string]any{"sink-dsn": ""}}}, "secret.dsn.sink-dsn is empty: set the DSN, or name your own Secret in secret.existingSecret"},
	}
	for _, c := range cases {
		_, err := render(c.vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.why, err, c.want)
		}
	}
}
