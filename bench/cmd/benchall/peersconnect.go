package main

// Kafka Connect for `make bench-peers`: the worker and plug-ins resolved
// by Maven from bench/peers/*-pom.xml, and a standalone worker started,
// checked and stopped.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/readside/readside/bench/peers"
	"github.com/readside/readside/e2e/testbed"
)

// connectInstall is a resolved Kafka Connect worker and plug-in directory.
type connectInstall struct {
	java       string
	classpath  string
	pluginPath string
}

// pluginExcludes are the groups a plug-in directory leaves to the worker's
// class loader, as a Kafka distribution's libs/ provides them: Kafka's own
// APIs, slf4j, and Jackson (the same 2.19.0 on both sides; a plug-in-local
// jackson-databind fails on the worker's Jackson module service entries,
// "JakartaXmlBindAnnotationModule not a subtype").
const pluginExcludes = "org.apache.kafka,org.slf4j,com.fasterxml.jackson.core"

// installConnect resolves the worker's classpath and copies each Debezium
// plug-in with its dependencies into its own plugin.path directory, cached
// under ~/.cache/readside-bench-peers keyed by the poms (Maven offline
// first, so a warm cache needs no network).
func installConnect(ctx context.Context, workDir string) (*connectInstall, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found: install a JDK 17 (apt-get install default-jre-headless); the test bed's Kafka needs it too")
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return nil, errors.New("mvn not found: install Maven (apt-get install maven); it resolves Kafka Connect and Debezium from Maven Central")
	}
	h := sha256.New()
	h.Write([]byte(pluginExcludes))
	for _, b := range [][]byte{peers.ConnectPom, peers.SourcePom, peers.SinkPom} {
		h.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "readside-bench-peers", hex.EncodeToString(h.Sum(nil)[:8]))
	cn := &connectInstall{java: java, pluginPath: filepath.Join(cache, "plugins")}
	cpFile := filepath.Join(cache, "connect.classpath")
	done := filepath.Join(cache, "complete")
	if _, err := os.Stat(done); err == nil {
		if b, err := os.ReadFile(cpFile); err == nil && classpathPresent(string(b)) {
			cn.classpath = strings.TrimSpace(string(b))
			return cn, nil
		}
	}
	if err := os.RemoveAll(cache); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cn.pluginPath, 0o755); err != nil {
		return nil, err
	}
	mvnRun := func(pom []byte, name string, goal ...string) error {
		path := filepath.Join(workDir, name+"-pom.xml")
		if err := os.WriteFile(path, pom, 0o644); err != nil {
			return err
		}
		var out []byte
		var err error
		for _, offline := range []bool{true, false} {
			args := append([]string{"-q", "-B", "-f", path}, goal...)
			if offline {
				args = append([]string{"-o"}, args...)
			}
			if out, err = exec.CommandContext(ctx, mvn, args...).CombinedOutput(); err == nil {
				return nil
			}
		}
		return fmt.Errorf("resolving %s with Maven (%s): %w\n%s", name, path, err, out)
	}
	if err := mvnRun(peers.ConnectPom, "connect", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile); err != nil {
		return nil, err
	}
	for name, pom := range map[string][]byte{"debezium-mariadb": peers.SourcePom, "debezium-jdbc": peers.SinkPom} {
		if err := mvnRun(pom, name, "dependency:copy-dependencies", "-DincludeScope=runtime", "-DexcludeGroupIds="+pluginExcludes,
			"-DoutputDirectory="+filepath.Join(cn.pluginPath, name)); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, err
	}
	cn.classpath = strings.TrimSpace(string(b))
	return cn, os.WriteFile(done, nil, 0o644)
}

func classpathPresent(cp string) bool {
	for _, jar := range strings.Split(strings.TrimSpace(cp), ":") {
		if _, err := os.Stat(jar); err != nil {
			return false
		}
	}
	return strings.TrimSpace(cp) != ""
}

// connectProc is a running Kafka Connect standalone worker.
type connectProc struct {
	*proc
	rest    string
	logPath string
	names   []string
	once    sync.Once
	rss     float64
}

// end is proc.end, once: the deferred stop after an explicit one must not
// wait for a second peak RSS reading.
func (c *connectProc) end() float64 {
	c.once.Do(func() { c.rss = c.proc.end() })
	return c.rss
}

// start runs a standalone worker with the given connector configs, with
// Kafka's own default JVM flags (kafka-run-class.sh) and a fixed 1 GiB
// heap, and waits until every connector and task is RUNNING.
func (d *dbz) start(ctx context.Context, tag, offsets string, connectors map[string]string) (*connectProc, error) {
	rest := freeAddr()
	_, port, _ := strings.Cut(rest, ":")
	dir := filepath.Join(d.e.dir, "connect")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	worker := peers.Render(peers.Worker, map[string]string{"BOOTSTRAP": strings.Join(d.e.bed.Kafka.Brokers(), ","), "REST_PORT": port,
		"PLUGIN_PATH": d.cn.pluginPath, "OFFSETS_FILE": offsets})
	args := []string{"-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true", "-cp", d.cn.classpath, "org.apache.kafka.connect.cli.ConnectStandalone"}
	wpath := filepath.Join(dir, tag+".worker.properties")
	if err := os.WriteFile(wpath, []byte(worker), 0o600); err != nil {
		return nil, err
	}
	d.publish("worker.properties", worker)
	args = append(args, wpath)
	var names []string
	for kind, body := range connectors {
		path := filepath.Join(dir, tag+"."+kind+".properties")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return nil, err
		}
		d.publish(map[string]string{"source": "mariadb-source.properties", "sink": "jdbc-sink.properties"}[kind], body)
		args = append(args, path)
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "name="); ok {
				names = append(names, v)
			}
		}
	}
	logPath := filepath.Join(dir, tag+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	cmd := exec.Command(d.cn.java, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &proc{cmd: cmd, peak: make(chan int64, 1), stop: cancel}
	go func() { p.peak <- testbed.SamplePeakRSS(pctx, cmd.Process.Pid) }()
	c := &connectProc{proc: p, rest: rest, logPath: logPath, names: names}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := c.check()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errNotRunning) || time.Now().After(deadline) {
			c.end()
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var errNotRunning = errors.New("not running yet")

// check fails with the worker's own words when it exited or a connector or
// task FAILED, and with errNotRunning while one is not RUNNING yet.
func (c *connectProc) check() error {
	if !pidAlive(c.cmd.Process.Pid) {
		return fmt.Errorf("the Kafka Connect worker exited; %s ends:\n%s", c.logPath, tail(c.logPath, 30))
	}
	for _, name := range c.names {
		resp, err := http.Get("http://" + c.rest + "/connectors/" + name + "/status")
		if err != nil {
			return errNotRunning
		}
		var st struct {
			Connector struct {
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"connector"`
			Tasks []struct {
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"tasks"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return errNotRunning
		}
		if st.Connector.State == "FAILED" {
			return fmt.Errorf("connector %s FAILED: %s", name, firstLines(st.Connector.Trace, 8))
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 {
			return errNotRunning
		}
		for _, t := range st.Tasks {
			if t.State == "FAILED" {
				return fmt.Errorf("connector %s task FAILED: %s", name, firstLines(t.Trace, 12))
			}
			if t.State != "RUNNING" {
				return errNotRunning
			}
		}
	}
	return nil
}

// healthy is check for the measuring loops: only failures count.
func (c *connectProc) healthy() error {
	if err := c.check(); err != nil && !errors.Is(err, errNotRunning) {
		return err
	}
	return nil
}

func pidAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
