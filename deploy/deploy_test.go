package deploy

// These tests keep deploy/ honest without a Docker engine, a cluster or a
// Prometheus: every YAML and JSON file parses, the Kubernetes manifests wire
// probes, secrets and config consistently, the sample configs load through
// readside's own config loader, the alert rules have the structure
// Prometheus wants, and every readside_* metric the rules and the dashboard
// query is documented in docs/metrics.md. promtool, when installed, checks
// the rules and runs their unit tests (prometheus/alerts_test.yaml).

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/readside/readside/config"
)

// configPath is where every example mounts readside.yaml; it is the
// Dockerfile's default -c.
const configPath = "/etc/readside/readside.yaml"

// yamlDocs decodes every document of a multi-document YAML file.
func yamlDocs(t *testing.T, path string) []any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []any
	for {
		var d any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

func yamlDoc(t *testing.T, path string) map[string]any {
	t.Helper()
	docs := yamlDocs(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: want one YAML document, got %d", path, len(docs))
	}
	m, ok := docs[0].(map[string]any)
	if !ok {
		t.Fatalf("%s: top level is %T, want a mapping", path, docs[0])
	}
	return m
}

// at walks maps by key and lists by index; nil when the path is absent.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	s, _ := at(v, path...).(string)
	return s
}

func list(v any, path ...any) []any {
	l, _ := at(v, path...).([]any)
	return l
}

func TestEveryFileParses(t *testing.T) {
	var yamls, jsons int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Helm templates are YAML only once rendered: deploy/helm/chartcheck
		// renders and parses them (make test-helm).
		if d.IsDir() && path == filepath.Join("helm", "readside", "templates") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			yamls++
			if docs := yamlDocs(t, path); len(docs) == 0 {
				t.Errorf("%s: no YAML document", path)
			}
		case ".json":
			jsons++
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A walk that finds nothing must not pass as "everything parses".
	if yamls < 10 || jsons < 1 {
		t.Fatalf("found %d YAML and %d JSON files under deploy/; expected the compose, Kubernetes, Prometheus and Grafana files", yamls, jsons)
	}
}

// manifests returns every Kubernetes object under kubernetes/, by file.
func manifests(t *testing.T) map[string][]map[string]any {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		for _, d := range yamlDocs(t, f) {
			m, ok := d.(map[string]any)
			if !ok || str(m, "kind") == "" || str(m, "apiVersion") == "" {
				t.Fatalf("%s: a document without kind and apiVersion", f)
			}
			out[f] = append(out[f], m)
		}
	}
	return out
}

func findObject(t *testing.T, ms map[string][]map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, objs := range ms {
		for _, o := range objs {
			if str(o, "kind") == kind && str(o, "metadata", "name") == name {
				return o
			}
		}
	}
	t.Fatalf("no %s %q in deploy/kubernetes", kind, name)
	return nil
}

// readsideContainer is one readside container of a Deployment, with what
// its checks need.
type readsideContainer struct {
	file, deployment string
	dep, pod, c      map[string]any
}

func readsideContainers(t *testing.T, ms map[string][]map[string]any) []readsideContainer {
	var out []readsideContainer
	for f, objs := range ms {
		for _, o := range objs {
			if str(o, "kind") != "Deployment" {
				continue
			}
			pod, _ := at(o, "spec", "template", "spec").(map[string]any)
			for _, c := range list(pod, "containers") {
				cm, _ := c.(map[string]any)
				if strings.HasPrefix(str(cm, "image"), "readside") {
					out = append(out, readsideContainer{f, str(o, "metadata", "name"), o, pod, cm})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].deployment < out[j].deployment })
	return out
}

func argsOf(c map[string]any) []string {
	var out []string
	for _, a := range list(c, "args") {
		s, _ := a.(string)
		out = append(out, s)
	}
	return out
}

func flagValue(args []string, names ...string) string {
	for i, a := range args {
		if slices.Contains(names, a) && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// portNumber resolves a probe's port (a number or a container port's name).
func portNumber(c map[string]any, p any) int {
	switch v := p.(type) {
	case int:
		return v
	case string:
		for _, cp := range list(c, "ports") {
			if str(cp, "name") == v {
				n, _ := at(cp, "containerPort").(int)
				return n
			}
		}
	}
	return 0
}

func TestKubernetesDeployments(t *testing.T) {
	ms := manifests(t)
	cs := readsideContainers(t, ms)
	roles := map[string]string{}
	for _, rc := range cs {
		name := rc.file + ": " + rc.deployment
		c := rc.c
		args := argsOf(c)
		if len(args) == 0 || args[0] != "run" {
			t.Errorf("%s: args %q: want readside run ...", name, args)
		}
		if got := flagValue(args, "--http"); got != ":9100" {
			t.Errorf("%s: --http %q, want :9100 (the probes and scrape annotations use 9100)", name, got)
		}
		role := flagValue(args, "--role")
		roles[rc.deployment] = role

		for _, probe := range []struct{ key, path string }{
			{"livenessProbe", "/healthz"}, {"readinessProbe", "/readyz"}, {"startupProbe", "/healthz"},
		} {
			if got := str(c, probe.key, "httpGet", "path"); got != probe.path {
				t.Errorf("%s: %s path %q, want %s", name, probe.key, got, probe.path)
			}
			if got := portNumber(c, at(c, probe.key, "httpGet", "port")); got != 9100 {
				t.Errorf("%s: %s port resolves to %d, want 9100", name, probe.key, got)
			}
		}
		ann := at(rc.dep, "spec", "template", "metadata", "annotations")
		if str(ann, "prometheus.io/scrape") != "true" || str(ann, "prometheus.io/port") != "9100" || str(ann, "prometheus.io/path") != "/metrics" {
			t.Errorf("%s: scrape annotations %v: want prometheus.io/scrape \"true\", port \"9100\", path /metrics", name, ann)
		}
		if at(c, "resources", "limits", "memory") != "256Mi" || str(c, "resources", "requests", "memory") == "" {
			t.Errorf("%s: resources %v: want a memory request and a 256Mi limit", name, at(c, "resources"))
		}
		if at(c, "securityContext", "readOnlyRootFilesystem") != true || at(c, "securityContext", "allowPrivilegeEscalation") != false {
			t.Errorf("%s: container securityContext %v: want readOnlyRootFilesystem true, allowPrivilegeEscalation false", name, at(c, "securityContext"))
		}
		if at(rc.pod, "securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: pod securityContext %v: want runAsNonRoot true", name, at(rc.pod, "securityContext"))
		}
		if uid, _ := at(rc.pod, "securityContext", "runAsUser").(int); uid == 0 {
			t.Errorf("%s: runAsUser is 0 or missing", name)
		}
		checkMounts(t, ms, name, rc)
	}
	want := map[string]string{"readside-tailer": "tailer", "readside-projector": "projector", "shop-api": "all"}
	for dep, role := range want {
		if roles[dep] != role {
			t.Errorf("Deployment %s: readside --role %q, want %q (found roles %v)", dep, roles[dep], role, roles)
		}
	}
	// Anything that runs a tailer must be single and never overlap itself.
	for _, rc := range cs {
		if r := roles[rc.deployment]; r == "tailer" || r == "all" {
			if n, _ := at(rc.dep, "spec", "replicas").(int); n != 1 {
				t.Errorf("%s runs a tailer with %d replicas: want 1", rc.deployment, n)
			}
			if s := str(rc.dep, "spec", "strategy", "type"); s != "Recreate" {
				t.Errorf("%s runs a tailer with strategy %q: want Recreate (two tailers must never run at once)", rc.deployment, s)
			}
		}
	}
	if n, _ := at(findObject(t, ms, "Deployment", "readside-projector"), "spec", "replicas").(int); n != 3 {
		t.Errorf("readside-projector: %d replicas, want 3", n)
	}
}

// checkMounts follows -c to its ConfigMap key and every *_file path of that
// config to a key of the Secret mounted there, so a renamed key or mount
// breaks the test rather than a pod.
func checkMounts(t *testing.T, ms map[string][]map[string]any, name string, rc readsideContainer) {
	t.Helper()
	cfgFile := flagValue(argsOf(rc.c), "-c", "--config")
	if cfgFile != configPath {
		t.Errorf("%s: -c %q, want %s", name, cfgFile, configPath)
	}
	volumes := map[string]any{}
	for _, v := range list(rc.pod, "volumes") {
		volumes[str(v, "name")] = v
	}
	// mountPath -> the file names it offers, and whether it is the secret.
	mounted := map[string][]string{}
	for _, m := range list(rc.c, "volumeMounts") {
		v := volumes[str(m, "name")]
		if v == nil {
			t.Errorf("%s: volumeMount %q has no volume", name, str(m, "name"))
			continue
		}
		var keys []string
		switch {
		case at(v, "configMap") != nil:
			cm := findObject(t, ms, "ConfigMap", str(v, "configMap", "name"))
			for k := range at(cm, "data").(map[string]any) {
				keys = append(keys, k)
			}
		case at(v, "secret") != nil:
			mode, _ := at(v, "secret", "defaultMode").(int)
			if mode == 0 || mode&0o004 != 0 {
				t.Errorf("%s: secret volume %q defaultMode %#o: readside refuses world-readable DSN files; use 0440 with fsGroup", name, str(v, "name"), mode)
			}
			if at(rc.pod, "securityContext", "fsGroup") == nil {
				t.Errorf("%s: a 0440 secret volume needs fsGroup so the non-root user can read it", name)
			}
			sec := findObject(t, ms, "Secret", str(v, "secret", "secretName"))
			for k := range at(sec, "stringData").(map[string]any) {
				keys = append(keys, k)
			}
		}
		mounted[str(m, "mountPath")] = keys
	}
	has := func(path string) bool {
		return slices.Contains(mounted[filepath.Dir(path)], filepath.Base(path))
	}
	if !has(cfgFile) {
		t.Errorf("%s: -c %s is not a key of a mounted ConfigMap (mounts: %v)", name, cfgFile, mounted)
	}
	// The config text is the ConfigMap value -c points at.
	var text string
	for _, m := range list(rc.c, "volumeMounts") {
		if str(m, "mountPath") == filepath.Dir(cfgFile) {
			cm := findObject(t, ms, "ConfigMap", str(volumes[str(m, "name")], "configMap", "name"))
			text = str(cm, "data", filepath.Base(cfgFile))
		}
	}
	var cfg any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("%s: the config in the ConfigMap: %v", name, err)
	}
	files := secretFiles(cfg, "")
	if len(files) == 0 {
		t.Errorf("%s: the config reads no DSN from a file; the examples keep DSNs in the Secret", name)
	}
	for key, path := range files {
		if !has(path) {
			t.Errorf("%s: config %s = %s is not a key of a mounted Secret or ConfigMap (mounts: %v)", name, key, path, mounted)
		}
	}
}

// secretFiles returns every *_file key of a decoded config with its path.
func secretFiles(v any, prefix string) map[string]string {
	out := map[string]string{}
	switch m := v.(type) {
	case map[string]any:
		for k, x := range m {
			if s, ok := x.(string); ok && strings.HasSuffix(k, "_file") {
				out[prefix+k] = s
			}
			for kk, vv := range secretFiles(x, prefix+k+".") {
				out[kk] = vv
			}
		}
	case []any:
		for i, x := range m {
			for kk, vv := range secretFiles(x, prefix+strconv.Itoa(i)+".") {
				out[kk] = vv
			}
		}
	}
	return out
}

// TestKubernetesConfigLoads loads the ConfigMap's config with readside's own
// loader, the DSN files written from the example Secret: unknown keys, bad
// DSNs and unreadable secret files fail here as they would in the pod.
func TestKubernetesConfigLoads(t *testing.T) {
	ms := manifests(t)
	text := str(findObject(t, ms, "ConfigMap", "readside-config"), "data", "readside.yaml")
	secret := findObject(t, ms, "Secret", "readside-dsn")
	dir := t.TempDir()
	for k, v := range at(secret, "stringData").(map[string]any) {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v.(string)), 0o440); err != nil {
			t.Fatal(err)
		}
	}
	const mount = "/var/run/secrets/readside/"
	if !strings.Contains(text, mount) {
		t.Fatalf("the ConfigMap's config reads no file under %s", mount)
	}
	path := filepath.Join(dir, "readside.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, mount, dir+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("the ConfigMap's readside.yaml does not load: %v", err)
	}
	if cfg.Source.DSN == "" || cfg.Sinks["reads"].DSN == "" {
		t.Fatal("the DSNs were not read from the secret files")
	}
	if len(cfg.Kafka.Brokers) == 0 {
		t.Error("kafka.brokers is empty: in Kubernetes the embedded broker would write to a read-only root file system")
	}
	if cfg.Kafka.GroupInstanceID != "" {
		t.Error("kafka.group_instance_id is set: every projector pod would claim the same static membership; leave it to default to the pod name")
	}
	checkSampleProjections(t, "the ConfigMap", cfg)
}

// checkSampleProjections holds both sample configs to what the brief and
// SPEC.md show: orders_by_customer joined with shop.customers, and
// messages_by_sender.
func checkSampleProjections(t *testing.T, where string, cfg config.Config) {
	t.Helper()
	obc, ok := cfg.Projections["orders_by_customer"]
	if !ok || obc.From != "shop.orders" || len(obc.Join) != 1 || obc.Join[0].From != "shop.customers" {
		t.Errorf("%s: orders_by_customer %+v: want shop.orders joined with shop.customers", where, obc)
	}
	if mbs, ok := cfg.Projections["messages_by_sender"]; !ok || mbs.From != "chat.messages" {
		t.Errorf("%s: messages_by_sender %+v: want a projection of chat.messages", where, mbs)
	}
}
