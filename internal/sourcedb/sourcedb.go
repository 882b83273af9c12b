// Package sourcedb opens the pools that read the source's rows outside
// the binlog (verify, the shard-key report), with the session settings
// that make the source compute what the tailer and the projector see:
//
//   - time_zone '+00:00': TIMESTAMPs come out in UTC, as events carry them;
//   - sql_mode 'NO_ENGINE_SUBSTITUTION' (MySQL's default without the
//     strict modes): a where filter or computed column sent as written
//     reads its quotes and || as MySQL's defaults read them, whatever the
//     server's global sql_mode says;
//   - no default database: every statement names its schema, so the
//     DSN's database need not be the projection's.
//
// Every connection, the tailer's own included, takes TLS from source.tls
// (TLS); the tailer's connection also checks the server's settings and
// is opened in cdc.
package sourcedb

import (
	"database/sql"
	"fmt"
	"net"
	"strconv"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
)

// Options are what a reader asks of its sessions beyond the settings
// every reader has.
type Options struct {
	// MaxConns bounds the pool; 0 is 4.
	MaxConns int
	// TextProtocol sends each query with its parameters written into its
	// text (interpolateParams), so every value comes back as MySQL's text
	// for its type, never a binary-protocol value the driver formats.
	TextProtocol bool
	// GroupConcatMax is group_concat_max_len in bytes; 0 keeps the
	// server's.
	GroupConcatMax int64
	// TLS is source.tls: a reader connects as the tailer does, never in
	// plaintext where the tailer would not.
	TLS config.TLS
}

// Open makes a pool on the source at dsn with every reader's session
// settings and o's. It does no I/O: the first query connects.
func Open(dsn string, o Options) (*sql.DB, error) {
	cfg, err := driverConfig(dsn, o)
	if err != nil {
		return nil, err
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	if o.MaxConns <= 0 {
		o.MaxConns = 4
	}
	db.SetMaxOpenConns(o.MaxConns)
	return db, nil
}

// driverConfig is dsn with the session settings (the package comment's
// and o's) over the DSN's own.
func driverConfig(dsn string, o Options) (*driver.Config, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("source DSN: %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = "'NO_ENGINE_SUBSTITUTION'"
	if o.GroupConcatMax > 0 {
		cfg.Params["group_concat_max_len"] = strconv.FormatInt(o.GroupConcatMax, 10)
	}
	if o.TextProtocol {
		// Not cleared otherwise: a DSN asking for it keeps it.
		cfg.InterpolateParams = true
	}
	cfg.DBName = ""
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host = cfg.Addr
	}
	tc, err := TLS(o.TLS, host)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		cfg.TLS = tc
		// Never send a password the server would reveal over plaintext.
		cfg.AllowCleartextPasswords = false
	}
	return cfg, nil
}
