package testbed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql" // also registers the database/sql driver

	"github.com/readside/readside/internal/sqlflavor"
)

// Credentials of the users the test bed creates on a private MariaDB. They are
// test-only secrets on a loopback server that lives for one test run.
const (
	AdminUser     = "rsadmin"
	AdminPassword = "rsadmin-test-pw"
	ReplUser      = "rsrepl"
	ReplPassword  = "rsrepl-test-pw"
)

// ErrNotControllable is returned by fault helpers (kill, restart, purge) on
// servers the test bed did not start (E2E_BROKER=external).
var ErrNotControllable = errors.New("server not started by the test bed: cannot kill or restart it")

// MySQL is the source and sink database of the e2e tests: a private MariaDB
// the test bed started, or an external server named by E2E_MYSQL_DSN.
type MySQL struct {
	// Host and Port of the server on loopback.
	Host string
	Port int

	adminDSN     string
	replDSN      string
	replUser     string
	replPassword string
	db           *sql.DB

	// Only set for a private server.
	dir      string
	tls      *TLSFiles
	serverID int      // 0: ServerID
	extra    []string // MariaDBOptions.Args
	mariadbd string
	proc     *process
	detached bool
	seq      atomic.Int64
	// dialect is read from the server on connect.
	dialect sqlflavor.Dialect
}

// ServerID is the server_id of the private MariaDB. Binlog clients must use
// a different one.
const ServerID = 1

// TLSFiles are the PEM files a private MariaDB serves TLS with.
type TLSFiles struct{ CA, Cert, Key string }

// StartMariaDB starts a private MariaDB of its own in dir (removed by
// Close), serving TLS when tls is set: for tests that need a differently
// configured source next to the shared one.
func StartMariaDB(ctx context.Context, dir string, tls *TLSFiles) (*MySQL, error) {
	return startMariaDB(ctx, dir, false, MariaDBOptions{TLS: tls})
}

// MariaDBOptions configure a private MariaDB beyond the test bed's
// defaults.
type MariaDBOptions struct {
	TLS *TLSFiles
	// ServerID replaces the default server_id 1 (a replica needs its own).
	ServerID int
	// Args are extra mariadbd options, after the defaults so they win
	// (e.g. "--binlog-row-metadata=MINIMAL", "--log-bin-compress=ON").
	Args []string
}

// StartMariaDBWith is StartMariaDB with options.
func StartMariaDBWith(ctx context.Context, dir string, opts MariaDBOptions) (*MySQL, error) {
	return startMariaDB(ctx, dir, false, opts)
}

// ServerID is the server's server_id.
func (m *MySQL) ServerID() int {
	if m.serverID != 0 {
		return m.serverID
	}
	return ServerID
}

// StartMariaDBArgs is StartMariaDB with extra server options appended
// after the test bed's own, so they override them (the last one wins):
// e.g. "--binlog-format=STATEMENT" for a misconfigured source.
func StartMariaDBArgs(ctx context.Context, dir string, tls *TLSFiles, args ...string) (*MySQL, error) {
	return startMariaDB(ctx, dir, false, MariaDBOptions{TLS: tls, Args: args})
}

// Close stops a server started by StartMariaDB and removes its directory.
func (m *MySQL) Close() error {
	return errors.Join(m.close(), Down(m.dir))
}

func startMariaDB(ctx context.Context, dir string, detached bool, opts MariaDBOptions) (*MySQL, error) {
	tls := opts.TLS
	mariadbd, err := ensureCommand(ctx, []string{"mariadb-server", "mariadb-client"}, "mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	installDB, err := ensureCommand(ctx, []string{"mariadb-server"}, "mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	m := &MySQL{Host: "127.0.0.1", Port: ports[0], dir: dir, tls: tls, mariadbd: mariadbd, detached: detached,
		replUser: ReplUser, replPassword: ReplPassword, serverID: opts.ServerID, extra: opts.Args}
	m.adminDSN = fmt.Sprintf("%s:%s@tcp(%s:%d)/", AdminUser, AdminPassword, m.Host, m.Port)
	m.replDSN = fmt.Sprintf("%s:%s@tcp(%s:%d)/", ReplUser, ReplPassword, m.Host, m.Port)

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// A private tmpdir: servers sharing /tmp were seen failing each
	// other's bootstrap ("Could not remove temporary table").
	if err := os.MkdirAll(m.tmpDir(), 0o755); err != nil {
		return nil, err
	}
	if err := installDataDir(ctx, installDB, mariadbd, m.dataDir(), m.tmpDir()); err != nil {
		return nil, err
	}
	if err := m.launch(ctx); err != nil {
		return nil, err
	}
	// First start: create the users over the root socket, then talk TCP.
	rootDB, err := sql.Open("mysql", "root@unix("+m.socket()+")/")
	if err != nil {
		return nil, err
	}
	defer rootDB.Close()
	// The socket file exists a moment before the server accepts on it: a
	// loaded CI box once had "connect: connection refused" there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := rootDB.PingContext(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("MariaDB's socket %s did not accept connections in 30s: %w\nerror log:\n%s", m.socket(), err, fileTail(filepath.Join(m.dir, "error.log"), 20))
		}
	}
	server, err := sqlflavor.Detect(ctx, rootDB)
	if err != nil {
		return nil, err
	}
	for _, stmt := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", AdminUser, AdminPassword),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", AdminUser),
		// What readside's tailer needs and nothing more (docs/operations.md, grants).
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", ReplUser, ReplPassword),
		fmt.Sprintf("GRANT REPLICATION SLAVE, %s, SELECT ON *.* TO '%s'@'%%'", sqlflavor.For(server).BinlogMonitorPrivilege, ReplUser),
		// The snapshot watermark and request tables (source.snapshot.signal_db).
		fmt.Sprintf("GRANT CREATE, CREATE TEMPORARY TABLES, INSERT, UPDATE, DELETE ON readside.* TO '%s'@'%%'", ReplUser),
	} {
		if _, err := rootDB.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("setting up users on MariaDB: %s: %w", stmt, err)
		}
	}
	if err := m.connect(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Geteuid())
}

func externalMySQL(ctx context.Context, dsn string) (*MySQL, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("E2E_MYSQL_DSN: %w", err)
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("E2E_MYSQL_DSN address %q: %w", cfg.Addr, err)
	}
	m := &MySQL{Host: host, adminDSN: dsn, replDSN: dsn, replUser: cfg.User, replPassword: cfg.Passwd}
	m.Port, _ = strconv.Atoi(port)
	if err := m.connect(ctx); err != nil {
		return nil, fmt.Errorf("connecting to E2E_MYSQL_DSN: %w", err)
	}
	return m, nil
}

func (m *MySQL) dataDir() string { return filepath.Join(m.dir, "data") }
func (m *MySQL) socket() string  { return filepath.Join(m.dir, "mysqld.sock") }
func (m *MySQL) tmpDir() string  { return filepath.Join(m.dir, "tmp") }

// launch starts mariadbd on the existing data dir and waits until it
// answers. The settings are what readside requires of a source (ROW binlog,
// full row image and metadata, GTID) plus durable commits so that kill -9
// loses nothing that was acknowledged.
func (m *MySQL) launch(ctx context.Context) error {
	args := []string{
		"--no-defaults",
		"--user=" + currentUser(),
		"--datadir=" + m.dataDir(),
		"--socket=" + m.socket(),
		"--tmpdir=" + m.tmpDir(),
		"--port=" + strconv.Itoa(m.Port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(m.dir, "mysqld.pid"),
		"--log-error=" + filepath.Join(m.dir, "error.log"),
		"--server-id=" + strconv.Itoa(m.ServerID()),
		"--log-bin=" + filepath.Join(m.dataDir(), "binlog"),
		"--binlog-format=ROW",
		"--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL",
		"--gtid-strict-mode=1",
		"--log-slave-updates=1",
		"--sync-binlog=1",
		"--innodb-flush-log-at-trx-commit=1",
		"--innodb-buffer-pool-size=256M",
		"--innodb-log-file-size=128M",
		"--max-connections=500",
		"--max-allowed-packet=64M",
		// Small binlog files: a GTID connect scans the current file from its
		// start to find its position, and one e2e run writes gigabytes.
		"--max-binlog-size=64M",
		"--skip-name-resolve",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
	}
	args = append(args, m.extra...)
	if m.tls != nil {
		args = append(args, "--ssl-ca="+m.tls.CA, "--ssl-cert="+m.tls.Cert, "--ssl-key="+m.tls.Key)
	}
	// The source runs in US/Samoa (UTC-11) so that time zone bugs show: the
	// tests and readside run in another zone (Debezium's trick).
	p, err := startProcess(processSpec{
		name: "mariadb", path: m.mariadbd, args: args, env: []string{"TZ=US/Samoa"},
		logPath: filepath.Join(m.dir, "stdout.log"), detached: m.detached,
	})
	if err != nil {
		return err
	}
	m.proc = p
	if err := waitTCP(p, m.Addr(), 60*time.Second); err != nil {
		return fmt.Errorf("%w\nerror log:\n%s", err, fileTail(filepath.Join(m.dir, "error.log"), 20))
	}
	// The server opens its unix socket just after the TCP port, and the
	// first start creates the users over it: a CI run once dialled the
	// socket before it existed ("connect: no such file or directory").
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(m.socket()); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MariaDB listens on %s but its socket %s did not appear in 10s\nerror log:\n%s", m.Addr(), m.socket(), fileTail(filepath.Join(m.dir, "error.log"), 20))
		}
	}
}

func (m *MySQL) connect(ctx context.Context) error {
	db, err := sql.Open("mysql", m.adminDSN+"?parseTime=false&multiStatements=false")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(32)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err = db.PingContext(ctx)
		if err == nil {
			server, err := sqlflavor.Detect(ctx, db)
			if err != nil {
				db.Close()
				return err
			}
			m.db, m.dialect = db, sqlflavor.For(server)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			db.Close()
			return fmt.Errorf("MariaDB at %s not answering: %w", m.Addr(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Addr is host:port.
func (m *MySQL) Addr() string { return m.Host + ":" + strconv.Itoa(m.Port) }

// Private reports whether the test bed started this server (so it can be
// killed, restarted and its binlogs purged).
func (m *MySQL) Private() bool { return m.proc != nil }

// AdminDSN is a go-sql-driver DSN of a user with all privileges, with no
// database selected (append a database name after the slash).
func (m *MySQL) AdminDSN() string { return m.adminDSN }

// ReplDSN is the DSN of the least-privileged replication user readside's
// tailer runs as (REPLICATION SLAVE, BINLOG MONITOR, SELECT).
func (m *MySQL) ReplDSN() string { return m.replDSN }

// ReplCredentials are the user and password of ReplDSN, for binlog clients.
func (m *MySQL) ReplCredentials() (user, password string) { return m.replUser, m.replPassword }

// DB is a pool of admin connections.
func (m *MySQL) DB() *sql.DB { return m.db }

// Exec runs statements in order on the admin pool, stopping at the first error.
func (m *MySQL) Exec(ctx context.Context, stmts ...string) error {
	for _, s := range stmts {
		if _, err := m.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// CreateDatabase creates a database with a unique name starting with prefix
// and returns the name, so tests never share state.
func (m *MySQL) CreateDatabase(ctx context.Context, prefix string) (string, error) {
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), m.seq.Add(1))
	return name, m.Exec(ctx, "CREATE DATABASE "+sqlQuote(name))
}

// BinlogPosition is the current binlog file, position and GTID position.
type BinlogPosition struct {
	File string
	Pos  uint32
	GTID string // @@gtid_binlog_pos on MariaDB, @@gtid_executed on MySQL
}

// CurrentPosition reads where the binlog ends now, with the statement
// and GTID variable of the server's release.
func (m *MySQL) CurrentPosition(ctx context.Context) (BinlogPosition, error) {
	var p BinlogPosition
	res, err := sqlflavor.Query(ctx, m.db, m.dialect.BinlogStatus)
	if err != nil {
		return p, fmt.Errorf("%s: %w", m.dialect.BinlogStatus, err)
	}
	st, err := sqlflavor.ParseBinlogStatus(res)
	if err != nil {
		return p, fmt.Errorf("%s: %w (is log_bin on?)", m.dialect.BinlogStatus, err)
	}
	p.File, p.Pos = st.File, st.Pos
	if err := m.db.QueryRowContext(ctx, "SELECT @@GLOBAL."+m.dialect.GTIDExecuted).Scan(&p.GTID); err != nil {
		return p, fmt.Errorf("reading @@%s: %w", m.dialect.GTIDExecuted, err)
	}
	p.GTID = strings.ReplaceAll(p.GTID, "\n", "")
	return p, nil
}

// RotateBinlog closes the current binlog file and starts the next one.
func (m *MySQL) RotateBinlog(ctx context.Context) error {
	return m.Exec(ctx, "FLUSH BINARY LOGS")
}

// PurgeBinlogsTo deletes every binlog file before file.
func (m *MySQL) PurgeBinlogsTo(ctx context.Context, file string) error {
	if !m.Private() {
		return ErrNotControllable
	}
	// PURGE takes no placeholders; binlog names come from the server.
	_, err := m.db.ExecContext(ctx, "PURGE BINARY LOGS TO '"+strings.ReplaceAll(file, "'", "''")+"'")
	return err
}

// PurgeAllBinlogs rotates and deletes every binlog file but the new current
// one. MariaDB keeps a file until its binlog checkpoint (crash recovery)
// has moved past it, which happens asynchronously, so this retries until
// only one file is left.
func (m *MySQL) PurgeAllBinlogs(ctx context.Context) error {
	if err := m.RotateBinlog(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pos, err := m.CurrentPosition(ctx)
		if err != nil {
			return err
		}
		if err := m.PurgeBinlogsTo(ctx, pos.File); err != nil {
			return err
		}
		res, err := sqlflavor.Query(ctx, m.db, m.dialect.BinaryLogs)
		if err != nil {
			return err
		}
		n := len(res.Rows)
		if n == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d binlog files still there 30s after PURGE BINARY LOGS TO %s", n, pos.File)
		}
		// A write moves the binlog checkpoint along.
		_ = m.RotateBinlog(ctx)
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill sends SIGKILL to mariadbd (a crash: InnoDB recovers on restart).
func (m *MySQL) Kill() error {
	if !m.Private() {
		return ErrNotControllable
	}
	return m.proc.kill()
}

// Stop shuts mariadbd down cleanly.
func (m *MySQL) Stop() error {
	if !m.Private() {
		return ErrNotControllable
	}
	return m.proc.stop(60 * time.Second)
}

// Restart starts a stopped or killed server again on the same port and data.
func (m *MySQL) Restart(ctx context.Context) error {
	if !m.Private() {
		return ErrNotControllable
	}
	if !m.proc.exited() {
		if err := m.Stop(); err != nil {
			return err
		}
	}
	if err := m.launch(ctx); err != nil {
		return err
	}
	// The pool reconnects by itself; wait until it can.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := m.db.PingContext(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MariaDB not answering after restart: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Flavor is "mariadb" or "mysql" (go-mysql's flavor names), from VERSION()
// and @@version_comment.
func (m *MySQL) Flavor(ctx context.Context) (string, error) {
	server, err := sqlflavor.Detect(ctx, m.db)
	return server.Flavor, err
}

// Version returns SELECT VERSION().
func (m *MySQL) Version(ctx context.Context) (string, error) {
	var v string
	err := m.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
	return v, err
}

func (m *MySQL) close() error {
	var errs []error
	if m.db != nil {
		errs = append(errs, m.db.Close())
	}
	if m.proc != nil {
		errs = append(errs, m.proc.stop(30*time.Second))
	}
	return errors.Join(errs...)
}

// sqlQuote quotes an identifier for MySQL by doubling backticks.
func sqlQuote(ident string) string {
	return "`" + strings.ReplaceAll(ident, "`", "``") + "`"
}
