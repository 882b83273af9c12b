// Package testbed starts the real servers readside's end-to-end tests run
// against — MariaDB 10.11 with ROW binlog and GTID, and Apache Kafka in KRaft
// mode from Maven Central jars — on free loopback ports in a temporary
// directory, with helpers to inject faults (kill -9, restart, binlog rotation
// and purge). It always cleans up, and checks that it did.
//
// Which broker runs is chosen by the environment:
//
//	E2E=1                      run e2e tests (make e2e and make test set it)
//	E2E_BROKER=kafka           real Apache Kafka (the default)
//	E2E_BROKER=kfake           franz-go's kfake in a child process (fast loops)
//	E2E_BROKER=external        E2E_KAFKA_BROKERS=host:port,... (and E2E_MYSQL_DSN)
//	E2E_MYSQL_DSN=dsn          use this MySQL/MariaDB instead of a private one
//
// Without E2E or E2E_BROKER, tests that need the test bed skip with a message
// saying how to run them.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options choose what Start runs.
type Options struct {
	// KafkaNodes is the number of real Kafka nodes (1 or 3); default 1.
	KafkaNodes int
	// Broker overrides E2E_BROKER ("kafka", "kfake", "external").
	Broker string
	// Dir is the directory for data and logs; default a new temp dir that
	// Close removes. A given Dir is also removed by Close.
	Dir string
	// Detached starts servers that outlive this process (make testbed-up).
	Detached bool
	// NoMySQL starts only the broker (for broker-only tests such as the
	// three-node cluster).
	NoMySQL bool
	// ProductionJVM runs the Kafka broker with the JVM settings of Kafka's
	// own start scripts (G1 with 20 ms pause goal, 1 GiB heap, the full
	// JIT) instead of the fast-starting ones the tests use (serial GC,
	// C1 only). For benchmarks: no broker in production runs the latter.
	ProductionJVM bool
	// MariaDBArgs are extra mariadbd options after the test bed's own, so
	// they win (benchmarks: e.g. a larger buffer pool).
	MariaDBArgs []string
}

// Bed is a running test bed.
type Bed struct {
	MySQL *MySQL
	Kafka *Kafka
	dir   string

	regMu sync.Mutex
	reg   *Registry // started by the first Registry call, closed by Close
}

// Enabled reports whether the environment asks for e2e tests.
func Enabled() bool {
	return os.Getenv("E2E") == "1" || os.Getenv("E2E_BROKER") != ""
}

// BrokerKind is the broker the environment selects.
func BrokerKind() string {
	if k := os.Getenv("E2E_BROKER"); k != "" {
		return k
	}
	return "kafka"
}

// Start starts MariaDB and the chosen broker. On error the returned Bed (if
// any) must still be closed.
func Start(ctx context.Context, opts Options) (*Bed, error) {
	if opts.KafkaNodes == 0 {
		opts.KafkaNodes = 1
	}
	if opts.Broker == "" {
		opts.Broker = BrokerKind()
	}
	dir := opts.Dir
	if dir == "" {
		sweepStale()
		d, err := os.MkdirTemp("", "readside-testbed-")
		if err != nil {
			return nil, err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dir, _ = filepath.Abs(dir)
	b := &Bed{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return b, err
	}

	type result struct {
		what string
		err  error
	}
	// MariaDB and Kafka start in parallel: the JVM's start-up dominates.
	done := make(chan result, 2)
	go func() {
		var err error
		if opts.NoMySQL {
			done <- result{"MariaDB", nil}
			return
		}
		if dsn := os.Getenv("E2E_MYSQL_DSN"); dsn != "" {
			b.MySQL, err = externalMySQL(ctx, dsn)
		} else {
			b.MySQL, err = startMariaDB(ctx, filepath.Join(dir, "mariadb"), opts.Detached, MariaDBOptions{Args: opts.MariaDBArgs})
		}
		done <- result{"MariaDB", err}
	}()
	go func() {
		var err error
		b.Kafka, err = startBroker(ctx, dir, opts)
		done <- result{"Kafka (" + opts.Broker + ")", err}
	}()
	var errs []error
	for range 2 {
		if r := <-done; r.err != nil {
			errs = append(errs, fmt.Errorf("starting %s: %w", r.what, r.err))
		}
	}
	return b, errors.Join(errs...)
}

func startBroker(ctx context.Context, dir string, opts Options) (*Kafka, error) {
	switch opts.Broker {
	case "kafka":
		return startKafka(ctx, dir, opts.KafkaNodes, opts.Detached, opts.ProductionJVM)
	case "kfake":
		return startKfake(ctx, filepath.Join(dir, "kfake"), opts.Detached)
	case "external":
		seeds := os.Getenv("E2E_KAFKA_BROKERS")
		if seeds == "" {
			return nil, errors.New("E2E_BROKER=external needs E2E_KAFKA_BROKERS=host:port[,host:port]")
		}
		k := &Kafka{Kind: "external", seeds: strings.Split(seeds, ",")}
		return k, k.WaitHealthy(ctx, 60*time.Second)
	}
	return nil, fmt.Errorf("E2E_BROKER=%q: want kafka, kfake or external", opts.Broker)
}

// Registry is the test bed's schema registry, started by the first test
// that asks and shared by the rest of the test binary (each test uses
// subjects of its own): Apicurio Registry, or franz-go's in-memory
// registry when the broker is kfake (a fast loop, where a JVM start would
// dominate and compatibility is not judged). A registry that does not
// start fails the test; the next one tries again.
func (b *Bed) Registry(t testing.TB) *Registry {
	t.Helper()
	b.regMu.Lock()
	defer b.regMu.Unlock()
	if b.reg == nil {
		if b.Kafka != nil && b.Kafka.Kind == "kfake" {
			reg, err := StartFakeRegistry()
			if err != nil {
				t.Fatalf("starting the in-memory schema registry: %v", err)
			}
			b.reg = reg
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			reg, err := StartRegistry(ctx, filepath.Join(b.dir, "registry"))
			if err != nil {
				t.Fatalf("starting the schema registry: %v", err)
			}
			t.Logf("%s answered at %s %s after exec", reg.Version(), reg.URL(), reg.Startup().Round(time.Millisecond))
			b.reg = reg
		}
	}
	return b.reg
}

// Dir is the directory holding every server's data and logs.
func (b *Bed) Dir() string { return b.dir }

// Env returns the environment that points the e2e suite (or readside) at
// this test bed as external servers.
func (b *Bed) Env() []string {
	env := []string{"E2E_BROKER=external"}
	if b.Kafka != nil {
		env = append(env, "E2E_KAFKA_BROKERS="+strings.Join(b.Kafka.Brokers(), ","))
	}
	if b.MySQL != nil {
		env = append(env, "E2E_MYSQL_DSN="+b.MySQL.AdminDSN())
	}
	return env
}

// Close stops every server, removes the directory and then checks that no
// process started from it is still alive and that the directory is gone.
func (b *Bed) Close() error {
	if b == nil {
		return nil
	}
	var errs []error
	b.regMu.Lock()
	errs = append(errs, b.reg.Close())
	b.regMu.Unlock()
	if b.Kafka != nil {
		errs = append(errs, b.Kafka.close())
	}
	if b.MySQL != nil {
		errs = append(errs, b.MySQL.close())
	}
	errs = append(errs, Down(b.dir))
	return errors.Join(errs...)
}

// Down kills every process whose command line names dir (what `make
// testbed-up` or a crashed test run left behind), removes dir, and reports
// anything that survived.
func Down(dir string) error {
	dir, _ = filepath.Abs(dir)
	for _, pid := range processesUsing(dir) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(processesUsing(dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	var errs []error
	if left := processesUsing(dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("test bed left processes behind: pids %v", left))
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing test bed dir: %w", err))
	}
	if _, err := os.Stat(dir); err == nil {
		errs = append(errs, fmt.Errorf("test bed dir %s still exists", dir))
	}
	return errors.Join(errs...)
}

// ownerFile holds the pid of the process that started a test bed.
const ownerFile = "owner.pid"

// sweepStale removes test beds whose owner died without cleaning up (go
// test's -timeout panics past TestMain; PDEATHSIG already killed their
// servers, but the directories stay).
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "readside-testbed-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // starting right now, or not ours
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && !pidAlive(pid) {
			_ = Down(d)
		}
	}
}

// processesUsing lists live processes whose command line names a path
// inside dir (not dir itself: `testbed down -dir D` must not kill itself).
func processesUsing(dir string) []int {
	inside := dir + "/"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), inside) {
			continue
		}
		if pidAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
