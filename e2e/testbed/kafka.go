package testbed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka broker's artifacts are resolved by Maven from this pom into the
// user's Maven cache; the test bed then runs the broker's main class on the
// machine's JDK. Embedding the pom keeps the test bed independent of the
// working directory the tests run in.
//
//go:embed kafka-pom.xml
var kafkaPom []byte

// KafkaVersion is the Apache Kafka release the pom pins.
const KafkaVersion = "4.1.1"

// Kafka is the broker side of the test bed: a real Apache Kafka cluster in
// KRaft mode (one or three combined broker+controller nodes), a kfake broker
// in a child process, or an external cluster.
type Kafka struct {
	// Kind is "kafka", "kfake" or "external".
	Kind  string
	nodes []*brokerNode
	seeds []string // external only
}

// brokerNode is one broker process the test bed controls.
type brokerNode struct {
	id       int
	dir      string
	port     int
	ctlPort  int
	start    func() (*process, error)
	proc     *process
	detached bool
}

// Brokers returns the seed addresses for clients.
func (k *Kafka) Brokers() []string {
	if k.Kind == "external" {
		return k.seeds
	}
	out := make([]string, len(k.nodes))
	for i, n := range k.nodes {
		out[i] = "127.0.0.1:" + strconv.Itoa(n.port)
	}
	return out
}

// Nodes is the number of broker processes the test bed controls (0 when
// external).
func (k *Kafka) Nodes() int { return len(k.nodes) }

// Kill sends SIGKILL to node i (0-based).
func (k *Kafka) Kill(i int) error {
	if i >= len(k.nodes) {
		return ErrNotControllable
	}
	return k.nodes[i].proc.kill()
}

// Stop shuts node i down cleanly.
func (k *Kafka) Stop(i int) error {
	if i >= len(k.nodes) {
		return ErrNotControllable
	}
	return k.nodes[i].proc.stop(60 * time.Second)
}

// Restart starts node i again on the same ports and data, and waits until
// the cluster answers metadata requests with every node present.
func (k *Kafka) Restart(ctx context.Context, i int) error {
	if i >= len(k.nodes) {
		return ErrNotControllable
	}
	n := k.nodes[i]
	if !n.proc.exited() {
		if err := n.proc.stop(60 * time.Second); err != nil {
			return err
		}
	}
	p, err := n.start()
	if err != nil {
		return err
	}
	n.proc = p
	return k.WaitHealthy(ctx, 120*time.Second)
}

// WaitHealthy waits until every node the test bed controls is listed in the
// cluster metadata (checked with kadm) and a controller is elected.
func (k *Kafka) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	for _, n := range k.nodes {
		if err := waitTCP(n.proc, "127.0.0.1:"+strconv.Itoa(n.port), timeout); err != nil {
			return err
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want := len(k.nodes)
	if want == 0 {
		want = 1
	}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		for _, n := range k.nodes {
			if n.proc.exited() {
				return fmt.Errorf("%s exited while starting (%v); log:\n%s", n.proc.name, n.proc.waitErr, n.proc.logTail())
			}
		}
		reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		md, err := adm.BrokerMetadata(reqCtx)
		cancel()
		switch {
		case err != nil:
			last = err
		case len(md.Brokers) < want:
			last = fmt.Errorf("%d of %d brokers registered", len(md.Brokers), want)
		case md.Controller < 0 && k.Kind == "kafka":
			last = errors.New("no active controller")
		default:
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kafka (%s) not healthy after %s: %v", k.Kind, timeout, last)
}

// Version returns the broker software version for the report.
func (k *Kafka) Version() string {
	switch k.Kind {
	case "kafka":
		return "Apache Kafka " + KafkaVersion + " (KRaft)"
	case "kfake":
		return "kfake (franz-go)"
	}
	return "external"
}

// close kills every node: the data is thrown away, and a controlled
// shutdown of a KRaft quorum one node at a time stalls once the remaining
// controllers lose their majority.
func (k *Kafka) close() error {
	var errs []error
	for _, n := range k.nodes {
		if n.proc != nil {
			errs = append(errs, n.proc.kill())
		}
	}
	return errors.Join(errs...)
}

// kafkaClasspath resolves the broker's jars with Maven (offline first, so a
// warm cache needs no network) and returns the classpath.
func kafkaClasspath(ctx context.Context, workDir string) (string, error) {
	java, err := ensureCommand(ctx, []string{"default-jre-headless"}, "java")
	if err != nil {
		return "", err
	}
	_ = java
	mvn, err := ensureCommand(ctx, []string{"maven"}, "mvn")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(kafkaPom)
	cacheDir := filepath.Join(userCacheDir(), "readside-testbed")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	cpFile := filepath.Join(cacheDir, "kafka-"+hex.EncodeToString(sum[:8])+".classpath")
	if b, err := os.ReadFile(cpFile); err == nil && classpathPresent(string(b)) {
		return strings.TrimSpace(string(b)), nil
	}
	pom := filepath.Join(workDir, "pom.xml")
	if err := os.WriteFile(pom, kafkaPom, 0o644); err != nil {
		return "", err
	}
	tmpOut := cpFile + ".tmp" + strconv.Itoa(os.Getpid())
	var out []byte
	for _, offline := range []bool{true, false} {
		args := []string{"-q", "-B", "-f", pom, "dependency:build-classpath", "-Dmdep.outputFile=" + tmpOut}
		if offline {
			args = append([]string{"-o"}, args...)
		}
		cmd := exec.CommandContext(ctx, mvn, args...)
		out, err = cmd.CombinedOutput()
		if err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("resolving Kafka %s with Maven (%s): %w\n%s", KafkaVersion, pom, err, out)
	}
	if err := os.Rename(tmpOut, cpFile); err != nil {
		return "", err
	}
	b, err := os.ReadFile(cpFile)
	return strings.TrimSpace(string(b)), err
}

func classpathPresent(cp string) bool {
	for _, jar := range strings.Split(strings.TrimSpace(cp), ":") {
		if _, err := os.Stat(jar); err != nil {
			return false
		}
	}
	return cp != ""
}

func userCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d
	}
	return os.TempDir()
}

// startKafka formats storage for nodes combined broker+controller nodes and
// starts them.
func startKafka(ctx context.Context, dir string, nodes int, detached, productionJVM bool) (*Kafka, error) {
	cp, err := kafkaClasspath(ctx, dir)
	if err != nil {
		return nil, err
	}
	java := lookCommand("java")
	ports, err := freePorts(2 * nodes)
	if err != nil {
		return nil, err
	}
	k := &Kafka{Kind: "kafka"}
	var voters []string
	for i := range nodes {
		n := &brokerNode{id: i + 1, dir: filepath.Join(dir, "kafka-"+strconv.Itoa(i+1)), port: ports[2*i], ctlPort: ports[2*i+1], detached: detached}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.ctlPort))
		k.nodes = append(k.nodes, n)
	}
	// A cluster id is a UUID in URL-safe base64 without padding.
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	raw[0] &= 0x7f // so the id cannot start with '-', which the tool reads as a flag
	clusterID := base64.RawURLEncoding.EncodeToString(raw[:])
	rf := min(3, nodes)
	minISR := 1
	if nodes >= 3 {
		minISR = 2
	}
	// Tests start and stop brokers often: a small heap, serial GC and
	// the quick C1 compiler start fastest.
	jvm := []string{"-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	if productionJVM {
		// kafka-server-start.sh's KAFKA_HEAP_OPTS and
		// kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
		jvm = []string{"-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
			"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15"}
	}
	var formats []*exec.Cmd // one per node
	for _, n := range k.nodes {
		if err := os.MkdirAll(filepath.Join(n.dir, "data"), 0o755); err != nil {
			return nil, err
		}
		props := strings.Join([]string{
			"process.roles=broker,controller",
			"node.id=" + strconv.Itoa(n.id),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.ctlPort),
			fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", n.port),
			"controller.listener.names=CONTROLLER",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"inter.broker.listener.name=PLAINTEXT",
			"log.dirs=" + filepath.Join(n.dir, "data"),
			"num.partitions=1",
			"default.replication.factor=" + strconv.Itoa(rf),
			"min.insync.replicas=" + strconv.Itoa(minISR),
			"offsets.topic.replication.factor=" + strconv.Itoa(rf),
			"offsets.topic.num.partitions=4",
			"transaction.state.log.replication.factor=" + strconv.Itoa(rf),
			"transaction.state.log.min.isr=" + strconv.Itoa(minISR),
			"transaction.state.log.num.partitions=4",
			"unclean.leader.election.enable=false",
			"auto.create.topics.enable=false",
			"group.initial.rebalance.delay.ms=0",
			// Fault tests kill nodes: shrink the ISR and fence dead brokers in
			// seconds rather than the production defaults of 30 s and 9 s.
			"replica.lag.time.max.ms=5000",
			"broker.session.timeout.ms=6000",
			"broker.heartbeat.interval.ms=1000",
			"message.max.bytes=16777216",
			"share.coordinator.state.topic.replication.factor=" + strconv.Itoa(rf),
			"share.coordinator.state.topic.min.isr=" + strconv.Itoa(minISR),
		}, "\n") + "\n"
		propsPath := filepath.Join(n.dir, "server.properties")
		if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
			return nil, err
		}
		// The format tool is a JVM start of its own per node: the
		// fast-starting settings take a third off its CPU time (15 s
		// instead of 29 s of wall time on the loaded CI box), and the
		// nodes format at once, below.
		formats = append(formats, exec.CommandContext(ctx, java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "kafka.tools.StorageTool", "format",
			"-t", clusterID, "-c", propsPath, "--ignore-formatted"))
		n.start = func() (*process, error) {
			return startProcess(processSpec{
				name: fmt.Sprintf("kafka-%d", n.id), path: java,
				args: append(slices.Clone(jvm),
					"-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
					"-cp", cp, "kafka.Kafka", propsPath,
				),
				logPath: filepath.Join(n.dir, "broker.log"), detached: n.detached,
			})
		}
	}
	errs := make([]error, len(formats))
	var wg sync.WaitGroup
	for i, format := range formats {
		wg.Go(func() {
			if out, err := format.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("formatting Kafka storage of node %d: %w\n%s", k.nodes[i].id, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, n := range k.nodes {
		p, err := n.start()
		if err != nil {
			return k, err
		}
		n.proc = p
	}
	return k, k.WaitHealthy(ctx, 120*time.Second)
}
