// Command demo is `make demo`: readside end to end on one machine, with
// nothing to set up.
//
//  1. starts a private MariaDB (the e2e test bed's: installed from the
//     Debian packages when missing and running as root) in -dir;
//  2. creates a demo schema: shop.customers, shop.orders, chat.messages;
//  3. writes a readside config with no kafka.brokers, so readside runs its
//     embedded broker, and two projections, orders_by_customer and
//     messages_by_sender, into the database demo_reads;
//  4. starts `readside run --http`, drives live traffic, and every few
//     seconds prints the read tables' row counts next to the source's,
//     a few rows, and the lag figures from /status;
//  5. on Ctrl-C (or after -duration) stops the traffic, SIGTERMs readside
//     (it drains and exits 0), stops MariaDB and removes -dir: no process
//     is left behind.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/httpapi"
)

func main() {
	bin := flag.String("readside", "bin/readside", "the readside binary")
	dir := flag.String("dir", ".demo", "directory for MariaDB, readside's data and logs (removed at the end)")
	every := flag.Duration("every", 3*time.Second, "how often to print the read tables")
	duration := flag.Duration("duration", 0, "stop after this long (0: run until Ctrl-C)")
	rate := flag.Int("rate", 40, "source writes per second")
	flag.Parse()
	if err := run(*bin, *dir, *every, *duration, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin, dir string, every, duration time.Duration, rate int) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	bin, _ = filepath.Abs(bin)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("readside binary %s: %w (run `make build` first, or use `make demo`)", bin, err)
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists (a demo still running, or one that crashed): stop it, or remove it with `go run ./e2e/cmd/testbed down -dir %s`", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		// Kills anything still running from dir and removes it.
		if derr := testbed.Down(dir); derr != nil {
			err = errors.Join(err, derr)
		} else {
			fmt.Println("demo: everything stopped;", dir, "removed")
		}
	}()

	fmt.Println("demo: starting a private MariaDB in", filepath.Join(dir, "mariadb"))
	src, err := testbed.StartMariaDB(ctx, filepath.Join(dir, "mariadb"), nil)
	if err != nil {
		return fmt.Errorf("starting MariaDB: %w", err)
	}
	defer src.Close()
	if err := createSchema(ctx, src); err != nil {
		return err
	}
	cfgPath, httpAddr, err := writeConfig(dir, src)
	if err != nil {
		return err
	}
	fmt.Println("demo: config", cfgPath)

	logPath := filepath.Join(dir, "readside.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	rs := exec.Command(bin, "run", "-c", cfgPath)
	rs.Env = append(os.Environ(), "SOURCE_DSN="+src.ReplDSN(), "SINK_DSN="+src.AdminDSN()+"demo_reads")
	rs.Stdout, rs.Stderr = logFile, logFile
	// Its own process group: Ctrl-C reaches the demo only, which stops
	// readside with SIGTERM after the traffic, so the drain is what shows.
	rs.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := rs.Start(); err != nil {
		return fmt.Errorf("starting readside: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- rs.Wait() }()
	fmt.Printf("demo: readside run started (pid %d, log %s, http://%s/status)\n", rs.Process.Pid, logPath, httpAddr)
	defer func() {
		if rs.ProcessState != nil {
			return
		}
		_ = rs.Process.Signal(syscall.SIGTERM)
		start := time.Now()
		select {
		case werr := <-exited:
			fmt.Printf("demo: readside drained and exited (%v) in %s\n", exitText(werr), time.Since(start).Round(time.Millisecond))
		case <-time.After(45 * time.Second):
			_ = rs.Process.Kill()
			<-exited
			err = errors.Join(err, errors.New("readside did not exit within 45s of SIGTERM; killed"))
		}
	}()
	if err := waitReady(ctx, httpAddr, exited, logPath); err != nil {
		return err
	}
	fmt.Println("demo: readside is ready; driving traffic (Ctrl-C to stop)")

	traffic := make(chan error, 1)
	go func() { traffic <- drive(ctx, src.DB(), rate) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println("\ndemo: stopping")
			if terr := <-traffic; terr != nil {
				return terr
			}
			return nil
		case werr := <-exited:
			return fmt.Errorf("readside exited (%v); log:\n%s", exitText(werr), tailFile(logPath))
		case terr := <-traffic:
			if terr != nil {
				return terr
			}
		case <-tick.C:
			show(ctx, src.DB(), httpAddr)
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

var schema = []string{
	"CREATE DATABASE shop",
	"CREATE DATABASE chat",
	"CREATE DATABASE demo_reads",
	"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(60) NOT NULL, tier ENUM('free','pro','enterprise') NOT NULL)",
	"CREATE TABLE shop.orders (id INT PRIMARY KEY AUTO_INCREMENT, customer_id INT NOT NULL, status ENUM('draft','paid','shipped','cancelled') NOT NULL, total_cents BIGINT NOT NULL, created_at DATETIME(3) NOT NULL, KEY (customer_id))",
	"CREATE TABLE chat.messages (id BIGINT PRIMARY KEY AUTO_INCREMENT, sender_id INT NOT NULL, room VARCHAR(30) NOT NULL, body TEXT NOT NULL, created_at DATETIME(3) NOT NULL)",
}

var names = []string{"Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances", "Edsger", "Radia", "Donald", "Hedy"}

func createSchema(ctx context.Context, src *testbed.MySQL) error {
	if err := src.Exec(ctx, schema...); err != nil {
		return err
	}
	tiers := []string{"free", "pro", "enterprise"}
	for i := 1; i <= 50; i++ {
		if _, err := src.DB().ExecContext(ctx, "INSERT INTO shop.customers VALUES (?, ?, ?)", i, fmt.Sprintf("%s %d", names[i%len(names)], i), tiers[i%3]); err != nil {
			return err
		}
	}
	return nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func writeConfig(dir string, src *testbed.MySQL) (path, httpAddr string, err error) {
	brokerAddr, err := freeAddr()
	if err != nil {
		return "", "", err
	}
	if httpAddr, err = freeAddr(); err != nil {
		return "", "", err
	}
	cfg := fmt.Sprintf(`# Written by make demo (e2e/cmd/demo). Secrets come from the environment.
source:
  dsn: "${SOURCE_DSN}"
  server_id: 4242
  tables: [shop.customers, shop.orders, chat.messages]
  heartbeat_period: 1s
# No kafka.brokers: readside runs its embedded broker, data under data_dir/kafka.
kafka:
  embedded_listen: %s
  partitions: 3
data_dir: %s
http:
  listen: %s
sinks:
  reads:
    dsn: "${SINK_DSN}"
projections:
  orders_by_customer:
    from: shop.orders
    sink: reads
    key: [customer_id, id]
    shard_by: customer_id
    columns: {customer_id: customer_id, id: id, status: status, total_cents: total_cents, created_at: created_at}
    join:
      - from: shop.customers
        on: {id: customer_id}
        columns: {customer_name: name, customer_tier: tier}
  messages_by_sender:
    from: chat.messages
    sink: reads
    key: [sender_id, created_at, id]
    shard_by: sender_id
    columns: {sender_id: sender_id, created_at: created_at, id: id, room: room, body: body}
`, brokerAddr, filepath.Join(dir, "data"), httpAddr)
	path = filepath.Join(dir, "readside.yaml")
	return path, httpAddr, os.WriteFile(path, []byte(cfg), 0o600)
}

func waitReady(ctx context.Context, httpAddr string, exited <-chan error, logPath string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("readside not ready after 2 minutes; log:\n%s", tailFile(logPath))
		}
		select {
		case <-ctx.Done():
			return nil
		case werr := <-exited:
			return fmt.Errorf("readside exited during start-up (%v); log:\n%s", exitText(werr), tailFile(logPath))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// drive writes a mix of shop and chat traffic at about rate per second.
func drive(ctx context.Context, db *sql.DB, rate int) error {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	statuses := []string{"paid", "shipped", "cancelled"}
	rooms := []string{"general", "random", "support"}
	words := []string{"hello", "ship", "it", "when", "is", "my", "order", "arriving", "thanks", "lgtm", "on", "call"}
	tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var err error
		switch r := rng.IntN(100); {
		case r < 35:
			_, err = db.ExecContext(ctx, "INSERT INTO shop.orders (customer_id, status, total_cents, created_at) VALUES (?, 'draft', ?, NOW(3))", 1+rng.IntN(50), 100+rng.IntN(50000))
		case r < 50:
			_, err = db.ExecContext(ctx, "UPDATE shop.orders SET status = ? ORDER BY RAND() LIMIT 1", statuses[rng.IntN(len(statuses))])
		case r < 53:
			_, err = db.ExecContext(ctx, "DELETE FROM shop.orders WHERE status = 'cancelled' ORDER BY id LIMIT 1")
		case r < 90:
			body := make([]string, 2+rng.IntN(5))
			for i := range body {
				body[i] = words[rng.IntN(len(words))]
			}
			_, err = db.ExecContext(ctx, "INSERT INTO chat.messages (sender_id, room, body, created_at) VALUES (?, ?, ?, NOW(3))", 1+rng.IntN(50), rooms[rng.IntN(len(rooms))], strings.Join(body, " "))
		default:
			_, err = db.ExecContext(ctx, "UPDATE chat.messages SET body = CONCAT(body, ' (edited)') ORDER BY RAND() LIMIT 1")
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("demo traffic: %w", err)
		}
	}
}

// show prints row counts (read table next to source), a few rows and the
// lag figures.
func show(ctx context.Context, db *sql.DB, httpAddr string) {
	count := func(q string) string {
		var n int64
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return "?"
		}
		return fmt.Sprint(n)
	}
	fmt.Printf("\n── %s ──\n", time.Now().Format("15:04:05"))
	var rep httpapi.Report
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/status", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
	}
	lag := func(name string) string {
		for _, p := range rep.Projections {
			if p.Name == name {
				return fmt.Sprintf("consumer lag %d offsets, %s", p.ConsumerLag, p.State)
			}
		}
		return "consumer lag ?"
	}
	srcLag := "?"
	if rep.Source.LagSeconds != nil {
		srcLag = fmt.Sprintf("%.1fs", *rep.Source.LagSeconds)
	}
	fmt.Printf("source lag %s (tailer %s), ready %v\n", srcLag, rep.Source.Tailer, rep.Ready)
	fmt.Printf("orders_by_customer  %6s rows (shop.orders %s)   %s\n", count("SELECT COUNT(*) FROM demo_reads.orders_by_customer"), count("SELECT COUNT(*) FROM shop.orders"), lag("orders_by_customer"))
	fmt.Printf("messages_by_sender  %6s rows (chat.messages %s)   %s\n", count("SELECT COUNT(*) FROM demo_reads.messages_by_sender"), count("SELECT COUNT(*) FROM chat.messages"), lag("messages_by_sender"))
	rows, err := db.QueryContext(ctx, "SELECT customer_id, COALESCE(MAX(customer_name), '?'), COALESCE(MAX(customer_tier), '?'), COUNT(*), SUM(total_cents) FROM demo_reads.orders_by_customer WHERE status <> 'cancelled' GROUP BY customer_id ORDER BY SUM(total_cents) DESC LIMIT 3")
	if err == nil {
		for rows.Next() {
			var c, n, cents int64
			var name, tier string
			if rows.Scan(&c, &name, &tier, &n, &cents) == nil {
				fmt.Printf("  customer %-3d %-14s %-10s %3d orders  %8.2f\n", c, name, tier, n, float64(cents)/100)
			}
		}
		rows.Close()
	}
	rows, err = db.QueryContext(ctx, "SELECT sender_id, room, body FROM demo_reads.messages_by_sender ORDER BY created_at DESC, id DESC LIMIT 2")
	if err == nil {
		for rows.Next() {
			var s int64
			var room, body string
			if rows.Scan(&s, &room, &body) == nil {
				fmt.Printf("  sender %-3d #%-8s %s\n", s, room, body)
			}
		}
		rows.Close()
	}
}

func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
