// Package sqlflavor is the one place that knows which statements and
// variable names each source server release understands. MySQL renamed
// its replication vocabulary in steps (8.0.22 statements, 8.0.26
// variables, 8.2 SHOW BINARY LOG STATUS) and removed the old statements
// in 8.4; MariaDB renamed some in 10.5 and kept the old ones as aliases.
// readside reads the server's flavor and version once (SELECT VERSION(),
// @@version_comment) and takes every version-dependent statement, column
// and variable name from the Dialect that Parse returns, so no caller
// guesses by trial and error (a removed statement answers ER_PARSE_ERROR
// 1064, which a retry loop would see forever).
package sqlflavor

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Flavor names, as go-mysql spells them.
const (
	MySQL   = "mysql"
	MariaDB = "mariadb"
)

// Server is a source server's flavor and version.
type Server struct {
	Flavor              string // MySQL or MariaDB
	Major, Minor, Patch int
	Version             string // VERSION() as the server said it
}

// AtLeast reports whether the server's version is major.minor.patch or later.
func (s Server) AtLeast(major, minor, patch int) bool {
	if s.Major != major {
		return s.Major > major
	}
	if s.Minor != minor {
		return s.Minor > minor
	}
	return s.Patch >= patch
}

func (s Server) String() string {
	name := "MySQL"
	if s.Flavor == MariaDB {
		name = "MariaDB"
	}
	return fmt.Sprintf("%s %d.%d.%d", name, s.Major, s.Minor, s.Patch)
}

var versionNumber = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`)

// Parse reads a server from SELECT VERSION() and @@version_comment. It
// refuses versions readside does not support, naming the upgrade.
func Parse(version, comment string) (Server, error) {
	v := strings.TrimSpace(version)
	// MariaDB's replication handshake prefixes its version with "5.5.5-"
	// for old clients; a proxy may pass that on.
	v = strings.TrimPrefix(v, "5.5.5-")
	s := Server{Flavor: MySQL, Version: version}
	if strings.Contains(strings.ToLower(v), "mariadb") || strings.Contains(strings.ToLower(comment), "mariadb") {
		s.Flavor = MariaDB
	}
	m := versionNumber.FindStringSubmatch(v)
	if m == nil {
		return s, fmt.Errorf("cannot read the source server's version from VERSION() %q: readside needs MySQL >= 5.7 or MariaDB >= 10.0 and chooses its statements by version", version)
	}
	s.Major, _ = strconv.Atoi(m[1])
	s.Minor, _ = strconv.Atoi(m[2])
	s.Patch, _ = strconv.Atoi(m[3])
	switch {
	case s.Flavor == MySQL && !s.AtLeast(5, 7, 0):
		return s, fmt.Errorf("the source is %s: readside needs MySQL 5.7 or later (ROW binlog events v2, GTIDs); upgrade the source", s)
	case s.Flavor == MariaDB && !s.AtLeast(10, 0, 2):
		return s, fmt.Errorf("the source is %s: readside needs MariaDB 10.0.2 or later (GTIDs); upgrade the source", s)
	}
	return s, nil
}

// Querier is what Detect reads the version through (*sql.DB, *sql.Conn, *sql.Tx).
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DetectQuery is the one statement Detect sends.
const DetectQuery = "SELECT VERSION(), @@version_comment"

// Detect reads the server's flavor and version.
func Detect(ctx context.Context, db Querier) (Server, error) {
	var version, comment sql.NullString
	if err := db.QueryRowContext(ctx, DetectQuery).Scan(&version, &comment); err != nil {
		return Server{}, fmt.Errorf("reading the source server's version (%s): %w", DetectQuery, err)
	}
	return Parse(version.String, comment.String)
}
