package cdc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// sourceDB is the SQL side of the source: settings checks, collations,
// the current position and table metadata.
type sourceDB struct {
	db       *sql.DB
	flavor   string
	host     string
	port     uint16
	user     string
	password string
}

func openSource(ctx context.Context, dsn, flavor string) (*sourceDB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("source.dsn: %w", err)
	}
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("source.dsn address %q: %w", cfg.Addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	cfg.MultiStatements = false
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	s := &sourceDB{db: db, flavor: flavor, host: host, port: uint16(port), user: cfg.User, password: cfg.Passwd}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the source at %s: %w", cfg.Addr, err)
	}
	if s.flavor == "" {
		var version string
		if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			db.Close()
			return nil, err
		}
		s.flavor = "mysql"
		if strings.Contains(strings.ToLower(version), "mariadb") {
			s.flavor = "mariadb"
		}
	}
	return s, nil
}

func (s *sourceDB) Close() error { return s.db.Close() }

// variable reads a global variable; a missing one reads as "".
func (s *sourceDB) variable(ctx context.Context, name string) (string, error) {
	var v sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&v)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1193 { // unknown system variable
		return "", nil
	}
	return v.String, err
}

// checkSettings returns every binlog setting that stops readside from
// reading the source correctly, each with its fix.
func (s *sourceDB) checkSettings(ctx context.Context) error {
	want := []struct{ name, value, fix string }{
		{"log_bin", "1", "start the server with --log-bin"},
		{"binlog_format", "ROW", "SET GLOBAL binlog_format=ROW (and in the server's config)"},
		{"binlog_row_image", "FULL", "SET GLOBAL binlog_row_image=FULL (and in the server's config)"},
		{"binlog_row_metadata", "FULL", "SET GLOBAL binlog_row_metadata=FULL (MySQL >= 8.0.1, MariaDB >= 10.5; and in the server's config)"},
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

// charsets maps collation ids to character set names.
func (s *sourceDB) charsets(ctx context.Context) (map[uint64]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL")
	if err != nil {
		return nil, fmt.Errorf("reading collations: %w", err)
	}
	defer rows.Close()
	out := map[uint64]string{63: "binary"}
	for rows.Next() {
		var id uint64
		var cs string
		if err := rows.Scan(&id, &cs); err != nil {
			return nil, err
		}
		out[id] = cs
	}
	return out, rows.Err()
}

// currentPosition is where the binlog ends now.
func (s *sourceDB) currentPosition(ctx context.Context) (Position, error) {
	p := Position{Flavor: s.flavor}
	rows, err := s.db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return p, fmt.Errorf("SHOW MASTER STATUS (needs REPLICATION CLIENT / BINLOG MONITOR): %w", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return p, errors.New("SHOW MASTER STATUS returned nothing: binary logging is off on the source")
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return p, err
	}
	p.File = string(vals[0])
	pos, _ := strconv.ParseUint(string(vals[1]), 10, 32)
	p.Pos = uint32(pos)
	rows.Close()
	name := "gtid_executed"
	if s.flavor == "mariadb" {
		// Not gtid_current_pos: after a replica without log_slave_updates is
		// promoted, only gtid_binlog_pos matches its binlog (PeerDB#4523).
		name = "gtid_binlog_pos"
	}
	gtid, err := s.variable(ctx, name)
	if err != nil {
		return p, err
	}
	p.GTID = strings.ReplaceAll(gtid, "\n", "")
	return p, nil
}

// checkTables verifies every captured table that exists has a primary key,
// and returns the ones that do not exist (yet, or any more: after a RENAME
// the old name stays captured so the events before it still count).
func (s *sourceDB) checkTables(ctx context.Context, tables []string) (missing []string, err error) {
	var errs []error
	for _, t := range tables {
		db, name, _ := strings.Cut(t, ".")
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, db, name).Scan(&n)
		if err != nil {
			return nil, fmt.Errorf("reading information_schema: %w", err)
		}
		if n == 0 {
			missing = append(missing, t)
			continue
		}
		err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'`, db, name).Scan(&n)
		if err != nil {
			return nil, fmt.Errorf("reading information_schema: %w", err)
		}
		if n == 0 {
			errs = append(errs, fmt.Errorf("source.tables: %s has no primary key: add one, or remove the table", t))
		}
	}
	return missing, errors.Join(errs...)
}
