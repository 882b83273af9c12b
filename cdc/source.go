package cdc

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/internal/sourcedb"
	"github.com/readside/readside/internal/sqlflavor"
)

// sourceDB is the SQL side of the source: settings checks, collations,
// the current position and table metadata.
type sourceDB struct {
	db       *sql.DB
	tls      *tls.Config // nil: plaintext
	flavor   string
	host     string
	port     uint16
	user     string
	password string

	serverID   uint32 // @@server_id
	serverUUID string // @@server_uuid (MySQL; "" on MariaDB)
	// dialect names every version-dependent statement and variable.
	dialect sqlflavor.Dialect
	// scratchDB holds readside's temporary tables (the signal database,
	// where its user may write; enum_members.go).
	scratchDB string
}

func openSource(ctx context.Context, dsn string, flavor config.Flavor, tlsCfg config.TLS) (*sourceDB, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("source.dsn: %w", err)
	}
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("source.dsn address %q: %w", cfg.Addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	tc, err := sourcedb.TLS(tlsCfg, host)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		cfg.TLS = tc
		// Never send a password the server would reveal over plaintext.
		cfg.AllowCleartextPasswords = false
		cfg.AllowNativePasswords = true
	}
	cfg.MultiStatements = false
	// Snapshot reads must render TIMESTAMP in UTC, like the binlog path.
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	// A connector, not a DSN string: FormatDSN cannot carry a *tls.Config,
	// and TLS silently dropped is exactly the fallback readside refuses.
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the source at %s: %w", cfg.Addr, err)
	}
	s, err := newSourceDB(ctx, db, string(flavor))
	if err != nil {
		db.Close()
		return nil, err
	}
	s.tls, s.host, s.port, s.user, s.password = tc, host, uint16(port), cfg.User, cfg.Passwd
	return s, nil
}

// newSourceDB reads what the tailer needs to know of a connected source
// once: its server_id, server_uuid, flavor and version, and so its
// dialect. flavor "" takes the server's own; source.flavor overrides it
// for go-mysql, never the statements, which follow the server.
func newSourceDB(ctx context.Context, db *sql.DB, flavor string) (*sourceDB, error) {
	s := &sourceDB{db: db, flavor: flavor}
	var sid sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&sid); err != nil {
		return nil, fmt.Errorf("reading the source's server_id: %w", err)
	}
	s.serverID = uint32(sid.Int64)
	var err error
	if s.serverUUID, err = s.variable(ctx, "server_uuid"); err != nil {
		return nil, err
	}
	server, err := sqlflavor.Detect(ctx, db)
	if err != nil {
		return nil, err
	}
	s.dialect = sqlflavor.For(server)
	if s.flavor == "" {
		s.flavor = server.Flavor
	}
	return s, nil
}

func (s *sourceDB) Close() error { return s.db.Close() }

// variable reads a global variable; a missing one reads as "".
func (s *sourceDB) variable(ctx context.Context, name string) (string, error) {
	var v sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&v)
	var me *driver.MySQLError
	if errors.As(err, &me) && me.Number == 1193 { // unknown system variable
		return "", nil
	}
	return v.String, err
}

// variableAny reads a variable renamed between releases under each of
// names in turn (the new name first) and returns the first the server
// has; "" when it has none.
func (s *sourceDB) variableAny(ctx context.Context, names []string) (value, name string, err error) {
	for _, n := range names {
		var v sql.NullString
		err := s.db.QueryRowContext(ctx, "SELECT @@GLOBAL."+n).Scan(&v)
		var me *driver.MySQLError
		if errors.As(err, &me) && me.Number == 1193 {
			continue
		}
		return v.String, n, err
	}
	return "", "", nil
}

// checkSettings returns every binlog setting that stops readside from
// reading the source correctly, each with its fix.
func (s *sourceDB) checkSettings(ctx context.Context) error {
	want := []struct{ name, value, fix string }{
		{"log_bin", "1", "start the server with --log-bin"},
		{"binlog_format", "ROW", "SET GLOBAL binlog_format=ROW (and in the server's config)"},
		{"binlog_row_image", "FULL", "SET GLOBAL binlog_row_image=FULL (and in the server's config)"},
	}
	var errs []error
	for _, w := range want {
		v, err := s.variable(ctx, w.name)
		if err != nil {
			return fmt.Errorf("reading @@%s: %w", w.name, err)
		}
		if !strings.EqualFold(v, w.value) && !(w.name == "log_bin" && strings.EqualFold(v, "ON")) {
			if v == "" {
				v = "unsupported by this server"
			}
			errs = append(errs, fmt.Errorf("source %s is %s, readside needs %s: %s", w.name, v, w.value, w.fix))
		}
	}
	if s.flavor == "mysql" {
		if v, err := s.variable(ctx, "binlog_row_value_options"); err == nil && strings.Contains(strings.ToUpper(v), "PARTIAL_JSON") {
			errs = append(errs, errors.New("source binlog_row_value_options is PARTIAL_JSON: readside needs full JSON images: SET GLOBAL binlog_row_value_options=''"))
		}
	}
	return errors.Join(errs...)
}

// rowMetadataFull reports whether the binlog names every column
// (binlog_row_metadata=FULL); otherwise the tailer keeps a schema history.
func (s *sourceDB) rowMetadataFull(ctx context.Context) (bool, string, error) {
	v, err := s.variable(ctx, "binlog_row_metadata")
	if err != nil {
		return false, "", fmt.Errorf("reading @@binlog_row_metadata: %w", err)
	}
	if v == "" {
		v = "unsupported by this server"
	}
	return strings.EqualFold(v, "FULL"), v, nil
}

// charsets maps collation ids to character set names, and names maps
// them to collation names.
func (s *sourceDB) charsets(ctx context.Context) (charsets, names map[uint64]string, err error) {
	rows, err := s.db.QueryContext(ctx, "SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL")
	if err != nil {
		return nil, nil, fmt.Errorf("reading collations: %w", err)
	}
	defer rows.Close()
	charsets, names = map[uint64]string{63: "binary"}, map[uint64]string{63: "binary"}
	for rows.Next() {
		var id uint64
		var cs, name string
		if err := rows.Scan(&id, &cs, &name); err != nil {
			return nil, nil, err
		}
		charsets[id], names[id] = cs, name
	}
	return charsets, names, rows.Err()
}

// currentPosition is where the binlog ends now.
func (s *sourceDB) currentPosition(ctx context.Context) (Position, error) {
	p := Position{Flavor: s.flavor}
	d := s.dialect
	res, err := sqlflavor.Query(ctx, s.db, d.BinlogStatus)
	if err != nil {
		return p, fmt.Errorf("%s (needs %s): %w", d.BinlogStatus, d.BinlogMonitorPrivilege, err)
	}
	st, err := sqlflavor.ParseBinlogStatus(res)
	if err != nil {
		return p, fmt.Errorf("%s: %w", d.BinlogStatus, err)
	}
	p.File, p.Pos = st.File, st.Pos
	gtid, err := s.variable(ctx, d.GTIDExecuted)
	if err != nil {
		return p, err
	}
	p.GTID = strings.ReplaceAll(gtid, "\n", "")
	return p, nil
}

// checkTables verifies every captured table that exists can be keyed:
// by its primary key, or by the unique NOT NULL columns source.keys names
// (source_keys.go). It returns the problems, each with its fix, and the
// tables that do not exist (yet, or any more: after a RENAME the old name
// stays captured so the events before it still count).
func (s *sourceDB) checkTables(ctx context.Context, tables []string, keys config.TableKeys) (missing []string, problems []keyProblem, err error) {
	for _, t := range tables {
		db, name, _ := strings.Cut(t, ".")
		ti, err := s.keyInfo(ctx, db, name)
		if err != nil {
			return nil, nil, err
		}
		if !ti.exists {
			missing = append(missing, t)
			continue
		}
		problems = append(problems, checkTableKeys(t, ti, keys[t])...)
	}
	return missing, problems, nil
}

// ErrPurged means the source no longer has the binlog a position needs.
var ErrPurged = errors.New("binlog purged")

// checkNotPurged verifies the source still has every transaction after
// pos, before connecting: the tailer then fails with its own clear error
// and recovery instead of whatever the server says (ERROR 1236 in several
// wordings), and never relies on a server refusing a too-old position.
func (s *sourceDB) checkNotPurged(ctx context.Context, pos Position) error {
	files, err := s.binlogFiles(ctx)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s returned nothing: binary logging is off on the source", s.dialect.BinaryLogs)
	}
	if pos.GTID == "" {
		for _, f := range files {
			if f == pos.File {
				return nil
			}
		}
		return fmt.Errorf("%w: file %s is gone (oldest is %s)", ErrPurged, pos.File, files[0])
	}
	have, err := pos.gtidSet()
	if err != nil {
		return err
	}
	var purged string
	if s.dialect.GTIDPurged != "" {
		if purged, err = s.variable(ctx, s.dialect.GTIDPurged); err != nil {
			return err
		}
		purged = strings.ReplaceAll(purged, "\n", "")
	} else {
		// The oldest binlog opens with a Gtid_list event: the state before
		// it, i.e. the last GTID per domain that is no longer available.
		rows, err := s.db.QueryContext(ctx, "SHOW BINLOG EVENTS IN '"+strings.ReplaceAll(files[0], "'", "''")+"' LIMIT 4")
		if err != nil {
			return fmt.Errorf("reading the oldest binlog's GTID list: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := scanRaw(rows)
			if err != nil {
				return err
			}
			if string(vals[2]) == "Gtid_list" {
				purged = strings.Trim(string(vals[len(vals)-1]), "[]")
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if purged == "" {
		return nil
	}
	gone, err := mysql.ParseGTIDSet(s.flavor, purged)
	if err != nil {
		return fmt.Errorf("parsing the source's purged GTIDs %q: %w", purged, err)
	}
	if !have.Contain(gone) {
		return fmt.Errorf("%w: the source's oldest binlog starts after %s, but the checkpoint is at %s", ErrPurged, purged, pos.GTID)
	}
	return nil
}

func (s *sourceDB) binlogFiles(ctx context.Context) ([]string, error) {
	d := s.dialect
	res, err := sqlflavor.Query(ctx, s.db, d.BinaryLogs)
	if err != nil {
		return nil, fmt.Errorf("%s (needs %s): %w", d.BinaryLogs, d.BinlogMonitorPrivilege, err)
	}
	return sqlflavor.ParseBinaryLogs(res)
}

// scanRaw scans the current row of a result whose shape differs between
// servers (SHOW statements) into raw columns, valid until the next Scan.
func scanRaw(rows *sql.Rows) ([]sql.RawBytes, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, rows.Scan(ptrs...)
}

// retentionSeconds is how long the source keeps binlogs before purging
// them by age; 0 means it does not.
func (s *sourceDB) retentionSeconds(ctx context.Context) (int64, error) {
	for _, name := range s.dialect.BinlogRetention {
		v, err := s.variable(ctx, name)
		if err != nil {
			return 0, err
		}
		if name == "expire_logs_days" {
			d, _ := strconv.ParseFloat(v, 64)
			if d > 0 {
				return int64(d * 86400), nil
			}
			continue
		}
		if n, _ := strconv.ParseInt(v, 10, 64); n > 0 {
			return n, nil
		}
	}
	return 0, nil
}
