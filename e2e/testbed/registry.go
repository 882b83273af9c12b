package testbed

// The test bed's schema registry is Apicurio Registry, run for its
// Confluent-compatible API (ccompat). Apicurio publishes the application on
// Maven Central only as a plain jar, so the test bed assembles it: Maven
// builds apicurio/ (its pom and one stand-in class, embedded, so the
// working directory does not matter) with the Quarkus plugin, once per
// content of those files, into the cache dir beside Kafka's classpath;
// each StartRegistry then runs that build's runner jar on a free loopback
// port with in-memory storage, so every registry starts empty.
//
// franz-go's in-memory registry (pkg/sr/srfake) is the fallback of
// kfake fast loops only (Bed.Registry): it speaks the same REST API but
// judges no compatibility.
//
// Either one is reached through a front (front.go) on a port of its own,
// which can make lookups by id fail as a registry that is down does
// (FailLookups) while registrations go through.

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

//go:embed apicurio/pom.xml
var apicurioPom []byte

//go:embed apicurio/src/main/java/io/readside/testbed/apicurio/ConfigIndexStandIn.java
var apicurioStandIn []byte

// apicurioStandInPath is where the build expects the stand-in's source.
const apicurioStandInPath = "src/main/java/io/readside/testbed/apicurio/ConfigIndexStandIn.java"

// RegistryVersion is the Apicurio Registry release apicurio/pom.xml
// builds, read from the pom so the two cannot disagree.
var RegistryVersion = "Apicurio Registry " + pomProperty(apicurioPom, "apicurio.version")

// FakeRegistryVersion names the fallback registry, for logs.
const FakeRegistryVersion = "franz-go srfake (in-memory, sr v1.8.0; judges no compatibility)"

func pomProperty(pom []byte, name string) string {
	m := regexp.MustCompile(`<` + regexp.QuoteMeta(name) + `>([^<]+)</`).FindSubmatch(pom)
	if m == nil {
		panic("apicurio/pom.xml has no <" + name + ">")
	}
	return string(m[1])
}

// Registry is a running schema registry with Confluent's REST API: an
// Apicurio Registry process, or (Fake) franz-go's in-memory one.
type Registry struct {
	proc    *process
	fake    *srfake.Registry
	front   *front
	url     string
	startup time.Duration
}

// StartRegistry builds Apicurio Registry when the cache lacks it (minutes
// on a clean machine, nothing afterwards), starts it with its log and
// temporary files in dir, and returns once its ccompat API answers.
// Close stops it.
func StartRegistry(ctx context.Context, dir string) (*Registry, error) {
	jar, err := InstallRegistry(ctx)
	if err != nil {
		return nil, err
	}
	java := lookCommand("java")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	r := &Registry{url: fmt.Sprintf("http://127.0.0.1:%d/apis/ccompat/v7", ports[0])}
	backend := r.url
	// Quarkus listens on every interface unless told otherwise: loopback
	// only. The JVM flags are the test bed's fast-starting ones (as
	// Kafka's); the heap is small, the registry holds a few schemas.
	args := []string{"-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=" + strconv.Itoa(ports[0]),
		"-Djava.io.tmpdir=" + dir, "-jar", jar}
	start := time.Now()
	r.proc, err = startProcess(processSpec{name: "apicurio-registry", path: java, args: args, dir: dir,
		logPath: filepath.Join(dir, "registry.log")})
	if err != nil {
		return nil, err
	}
	deadline := start.Add(2 * time.Minute)
	for {
		err := r.ready(ctx)
		if err == nil {
			r.startup = time.Since(start)
			if r.front, err = newFront(backend); err != nil {
				return nil, errors.Join(err, r.Close())
			}
			r.url = r.front.url
			return r, nil
		}
		if r.proc.exited() {
			return nil, fmt.Errorf("%s exited while starting (%v); %s ends:\n%s", RegistryVersion, r.proc.waitErr, r.proc.logPath, fileTail(r.proc.logPath, 30))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.Join(fmt.Errorf("%s not ready after %s: %w; %s ends:\n%s", RegistryVersion, time.Since(start).Round(time.Second), err, r.proc.logPath, fileTail(r.proc.logPath, 30)), r.Close())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// StartFakeRegistry starts franz-go's in-memory registry on a free
// loopback port, in this process: for kfake fast loops, where a JVM
// start would dominate. It stores ids, versions and compatibility
// levels but accepts every change.
func StartFakeRegistry() (*Registry, error) {
	f := srfake.New()
	fr, err := newFront(f.URL())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Registry{fake: f, front: fr, url: fr.url}, nil
}

// FailLookups makes every later lookup of a schema by id (GET
// .../schemas/ids/...), what a consumer does, fail as a registry that is
// restarting or unreachable behind a proxy does: HTTP 503. Registrations
// still succeed, so a producer goes on. false lifts it.
func (r *Registry) FailLookups(fail bool) { r.front.failLookups(fail) }

// Refuse makes every later registration under subject answer as Confluent
// refuses an incompatible schema (HTTP 409, error_code 409) with message,
// registering nothing; "" lifts it. For the in-memory registry, which
// judges no compatibility: against Apicurio, set the subject's
// compatibility and let the registry judge.
func (r *Registry) Refuse(subject, message string) { r.front.setRefused(subject, message) }

// ready succeeds once the ccompat API lists subjects.
func (r *Registry) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/subjects", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/subjects: %s %s", r.url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// URL is the base of the Confluent-compatible API, for franz-go's
// sr.URLs or any Confluent client: http://127.0.0.1:PORT/apis/ccompat/v7
// (Apicurio) or http://127.0.0.1:PORT (the fake).
func (r *Registry) URL() string { return r.url }

// Fake is the in-memory registry behind a StartFakeRegistry, for a test
// that must stand in for a verdict it cannot give; nil for Apicurio.
func (r *Registry) Fake() *srfake.Registry { return r.fake }

// Version names what runs, for logs.
func (r *Registry) Version() string {
	if r.fake != nil {
		return FakeRegistryVersion
	}
	return RegistryVersion
}

// Startup is how long Apicurio took from exec to answering (0 for the
// fake).
func (r *Registry) Startup() time.Duration { return r.startup }

// Close stops the registry; its in-memory schemas go with it.
func (r *Registry) Close() error {
	if r != nil && r.front != nil {
		r.front.close()
	}
	switch {
	case r == nil:
		return nil
	case r.fake != nil:
		r.fake.Close()
		return nil
	case r.proc != nil:
		return r.proc.stop(10 * time.Second)
	}
	return nil
}

// InstallRegistry builds Apicurio Registry from apicurio/ when the cache
// does not hold that build yet, and returns the path of its runner jar
// (its lib/ beside it). `go run ./e2e/cmd/testbed install` (make test's first
// step) calls it, so the e2e suite finds it built. Maven runs offline
// first, so a warm Maven cache needs no network; test binaries building
// at once wait for each other on a lock file.
func InstallRegistry(ctx context.Context) (string, error) {
	if _, err := ensureCommand(ctx, []string{"default-jre-headless"}, "java"); err != nil {
		return "", err
	}
	mvn, err := ensureCommand(ctx, []string{"maven"}, "mvn")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(apicurioPom)
	h.Write(apicurioStandIn)
	root := filepath.Join(userCacheDir(), "readside-testbed")
	cache := filepath.Join(root, "apicurio-"+hex.EncodeToString(h.Sum(nil)[:8]))
	jar := filepath.Join(cache, apicurioRunner)
	done := filepath.Join(cache, "complete")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(cache+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(done); err == nil {
		if _, err := os.Stat(jar); err == nil {
			return jar, nil
		}
	}
	build := cache + ".build"
	for _, d := range []string{cache, build} {
		if err := os.RemoveAll(d); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(build, 0o755); err != nil {
		return "", err
	}
	pom := filepath.Join(build, "pom.xml")
	if err := os.WriteFile(pom, apicurioPom, 0o644); err != nil {
		return "", err
	}
	standIn := filepath.Join(build, apicurioStandInPath)
	if err := os.MkdirAll(filepath.Dir(standIn), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(standIn, apicurioStandIn, 0o644); err != nil {
		return "", err
	}
	var out []byte
	for _, offline := range []bool{true, false} {
		// -DskipDefault turns off the profile of Apicurio's parent pom
		// that adds repositories outside Maven Central: everything comes
		// from Central, and a machine that reaches nothing else does not
		// wait on them.
		args := []string{"-B", "-q", "-DskipDefault", "-f", pom, "package"}
		if offline {
			args = append([]string{"-o"}, args...)
		}
		cmd := exec.CommandContext(ctx, mvn, args...)
		cmd.Dir = build
		if out, err = cmd.CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("building %s with Maven and Quarkus (%s; by hand: mvn -DskipDefault -f e2e/testbed/apicurio/pom.xml package): %w\n%s",
			RegistryVersion, pom, err, lastLines(out, 40))
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{apicurioRunner, "lib"} {
		if err := os.Rename(filepath.Join(build, "target", name), filepath.Join(cache, name)); err != nil {
			return "", fmt.Errorf("the Quarkus build of %s left no target/%s: %w", pom, name, err)
		}
	}
	if err := os.RemoveAll(build); err != nil {
		return "", err
	}
	return jar, os.WriteFile(done, nil, 0o644)
}

// apicurioRunner is the jar Quarkus's legacy-jar packaging (which
// Apicurio's properties ask for) makes of apicurio/pom.xml; its manifest
// names the jars in lib/ beside it.
const apicurioRunner = "apicurio-registry-1-runner.jar"

// lastLines keeps the end of a long tool output for an error message.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
