package testbed

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Connect is a Kafka Connect standalone worker running Debezium's MariaDB
// source connector or JDBC sink connector against the bed: the worker and
// the plug-ins `make bench-peers` runs, resolved by Maven from the same poms
// (bench/peers/connect-pom.xml, debezium-mariadb-pom.xml,
// debezium-jdbc-pom.xml; apicurio-converter-pom.xml adds Apicurio's
// AvroConverter for connectors that write Avro) and
// configured from the same worker template (bench/peers/worker.properties),
// so a clean clone fetches them through the project's own files.
type Connect struct {
	proc  *process
	rest  string
	names []string
}

// StartConnect starts a worker on the bed's broker with the given
// connector configs (properties text, each with a name=) and waits until
// every connector and its task is RUNNING. dir holds its configs, offsets
// and log.
func (b *Bed) StartConnect(ctx context.Context, dir string, connectors ...string) (*Connect, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	peers := filepath.Join(root, "bench", "peers")
	cp, plugins, err := connectInstall(ctx, dir, peers)
	if err != nil {
		return nil, err
	}
	java, err := ensureCommand(ctx, []string{"default-jre-headless"}, "java")
	if err != nil {
		return nil, err
	}
	tmpl, err := os.ReadFile(filepath.Join(peers, "worker.properties"))
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	vars := map[string]string{"BOOTSTRAP": strings.Join(b.Kafka.Brokers(), ","), "REST_PORT": port,
		"PLUGIN_PATH": plugins, "OFFSETS_FILE": filepath.Join(dir, "connect.offsets")}
	var unknown []string
	worker := os.Expand(string(tmpl), func(k string) string {
		v, ok := vars[k]
		if !ok {
			if strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
				unknown = append(unknown, k)
			}
			return "${" + k + "}" // as written, like peers.Render (the comments say ${...})
		}
		return v
	})
	if len(unknown) > 0 {
		return nil, fmt.Errorf("bench/peers/worker.properties uses ${%s}, which the test bed does not fill in: add it to StartConnect's vars", strings.Join(unknown, "}, ${"))
	}
	args := []string{"-Xms256m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "org.apache.kafka.connect.cli.ConnectStandalone"}
	wpath := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(wpath, []byte(worker), 0o600); err != nil {
		return nil, err
	}
	args = append(args, wpath)
	c := &Connect{rest: "127.0.0.1:" + port}
	for i, body := range connectors {
		path := filepath.Join(dir, fmt.Sprintf("connector-%d.properties", i))
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return nil, err
		}
		args = append(args, path)
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "name="); ok {
				c.names = append(c.names, strings.TrimSpace(v))
			}
		}
	}
	c.proc, err = startProcess(processSpec{name: "kafka-connect", path: java, args: args, logPath: filepath.Join(dir, "connect.log")})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := c.Check()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errNotRunning) || time.Now().After(deadline) || ctx.Err() != nil {
			c.Close()
			return nil, fmt.Errorf("%w\n%s ends:\n%s", err, c.proc.logPath, fileTail(c.proc.logPath, 30))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var errNotRunning = errors.New("a Kafka Connect connector is not running yet")

// Check fails with the worker's own words when it exited or a connector or
// task FAILED, and with errNotRunning while one is not RUNNING yet.
func (c *Connect) Check() error {
	if c.proc.exited() {
		return fmt.Errorf("the Kafka Connect worker exited")
	}
	for _, name := range c.names {
		resp, err := http.Get("http://" + c.rest + "/connectors/" + name + "/status")
		if err != nil {
			return errNotRunning
		}
		var st struct {
			Connector struct{ State, Trace string }   `json:"connector"`
			Tasks     []struct{ State, Trace string } `json:"tasks"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return errNotRunning
		}
		if st.Connector.State == "FAILED" {
			return fmt.Errorf("connector %s FAILED: %s", name, st.Connector.Trace)
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 {
			return errNotRunning
		}
		for _, t := range st.Tasks {
			if t.State == "FAILED" {
				return fmt.Errorf("connector %s task FAILED: %s", name, t.Trace)
			}
			if t.State != "RUNNING" {
				return errNotRunning
			}
		}
	}
	return nil
}

// Close stops the worker.
func (c *Connect) Close() error { return c.proc.stop(10 * time.Second) }

// Kill stops the worker with SIGKILL: the records it produced after its
// last offset flush are produced again by the next worker on the same
// offsets file (at-least-once).
func (c *Connect) Kill() error { return c.proc.kill() }

// InstallConnect resolves the Kafka Connect worker and its plug-ins into
// the cache when they are not there yet (`go run ./e2e/cmd/testbed
// install` calls it), and returns the plugin.path directory.
func InstallConnect(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "readside-connect-install")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	_, plugins, err := connectInstall(ctx, dir, filepath.Join(root, "bench", "peers"))
	return plugins, err
}

// connectInstall resolves the worker's classpath and copies Debezium's
// MariaDB and JDBC sink plug-ins and Apicurio's converters with their
// dependencies into a plugin.path
// directory, one subdirectory each, cached under the user's cache directory
// keyed by the poms (Maven offline first, so a warm cache needs no network). Kafka's own APIs, slf4j and
// Jackson stay with the worker, as bench-peers does it.
func connectInstall(ctx context.Context, workDir, peers string) (classpath, pluginPath string, err error) {
	mvn, err := ensureCommand(ctx, []string{"maven"}, "mvn")
	if err != nil {
		return "", "", err
	}
	const excludes = "org.apache.kafka,org.slf4j,com.fasterxml.jackson.core"
	h := sha256.New()
	h.Write([]byte(excludes))
	fmt.Fprint(h, pluginManifests)
	poms := map[string][]byte{}
	for _, name := range []string{"connect-pom.xml", "debezium-mariadb-pom.xml", "debezium-jdbc-pom.xml", "apicurio-converter-pom.xml"} {
		b, err := os.ReadFile(filepath.Join(peers, name))
		if err != nil {
			return "", "", err
		}
		poms[name] = b
		h.Write(b)
	}
	cache := filepath.Join(userCacheDir(), "readside-testbed", "connect-"+hex.EncodeToString(h.Sum(nil)[:8]))
	pluginPath = filepath.Join(cache, "plugins")
	cpFile := filepath.Join(cache, "connect.classpath")
	done := filepath.Join(cache, "complete")
	if _, err := os.Stat(done); err == nil {
		if b, err := os.ReadFile(cpFile); err == nil && classpathPresent(string(b)) {
			return strings.TrimSpace(string(b)), pluginPath, nil
		}
	}
	if err := os.RemoveAll(cache); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(pluginPath, 0o755); err != nil {
		return "", "", err
	}
	run := func(pom string, goal ...string) error {
		path := filepath.Join(workDir, pom)
		if err := os.WriteFile(path, poms[pom], 0o644); err != nil {
			return err
		}
		var out []byte
		var err error
		for _, offline := range []bool{true, false} {
			// -DskipDefault: Apicurio's parent pom (the converter's) adds
			// repositories outside Maven Central unless it is set.
			args := append([]string{"-q", "-B", "-DskipDefault", "-f", path}, goal...)
			if offline {
				args = append([]string{"-o"}, args...)
			}
			if out, err = exec.CommandContext(ctx, mvn, args...).CombinedOutput(); err == nil {
				return nil
			}
		}
		return fmt.Errorf("resolving %s with Maven: %w\n%s", path, err, bytes.TrimSpace(out))
	}
	if err := run("connect-pom.xml", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile); err != nil {
		return "", "", err
	}
	for _, plugin := range []string{"debezium-mariadb", "debezium-jdbc", "apicurio-converter"} {
		if err := run(plugin+"-pom.xml", "dependency:copy-dependencies", "-DincludeScope=runtime", "-DexcludeGroupIds="+excludes,
			"-DoutputDirectory="+filepath.Join(pluginPath, plugin)); err != nil {
			return "", "", err
		}
	}
	for plugin, services := range pluginManifests {
		if err := writeManifestJar(filepath.Join(pluginPath, plugin, "readside-plugin-manifest.jar"), services); err != nil {
			return "", "", err
		}
	}
	b, err := os.ReadFile(cpFile)
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(string(b)), pluginPath, os.WriteFile(done, nil, 0o644)
}

// pluginManifests are the ServiceLoader manifests a plug-in's jars lack:
// the worker finds plug-ins by their manifests only
// (plugin.discovery=service_load in bench/peers/worker.properties, which
// spares it a scan of every class), and Apicurio 2.4.2's converter jar has
// none. Each becomes a jar of its own in the plug-in's directory, what
// Kafka's connect-plugin-path sync-manifests writes.
var pluginManifests = map[string]map[string][]string{
	"apicurio-converter": {"org.apache.kafka.connect.storage.Converter": {"io.apicurio.registry.utils.converter.AvroConverter"}},
}

// writeManifestJar writes a jar holding META-INF/services/<interface>
// listing its implementations, for each interface of services.
func writeManifestJar(path string, services map[string][]string) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for iface, impls := range services {
		w, err := zw.Create("META-INF/services/" + iface)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, strings.Join(impls, "\n")+"\n"); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// repoRoot is the checkout's root: the directory above the working
// directory (a test's package) whose go.mod is readside's.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/readside/readside\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the readside checkout (its go.mod) is not above the working directory: run the test from the checkout")
		}
		dir = parent
	}
}
