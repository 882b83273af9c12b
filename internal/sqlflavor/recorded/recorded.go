// Package recorded replays what a source server release answers to the
// statements readside sends, for tests of servers this machine does not
// run (MySQL 5.7, 8.0, 8.4, 9.x) and, recorded live, MariaDB 10.11. Each
// testdata/*.json file is one release: its VERSION(), its variables, the
// exact columns and sample rows of its SHOW statements, and the error it
// gives for the statements it removed. Open serves one through
// database/sql, so the code under test parses exactly what it parses in
// production; a statement the recording does not know fails the test.
package recorded

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	mysqldriver "github.com/go-sql-driver/mysql"
)

//go:embed testdata/*.json
var files embed.FS

// Server is one recorded release.
type Server struct {
	Name           string `json:"name"`   // file name without .json
	Source         string `json:"source"` // where the answers come from
	Version        string `json:"version"`
	VersionComment string `json:"version_comment"`
	// Variables answer SELECT @@name and SELECT @@GLOBAL.name; null is NULL.
	Variables map[string]*string `json:"variables"`
	// Unknown are variables the release does not have (ER 1193).
	Unknown []string `json:"unknown_variables"`
	// Answers are whole answers by exact statement text.
	Answers map[string]Answer `json:"answers"`
	// Removed are statements this release refuses (their answers are
	// ER_PARSE_ERROR): readside must never send them to it.
	Removed []string `json:"removed"`
	// Expect is what readside should read from the answers.
	Expect Expect `json:"expect"`
}

// Answer is a result set or an error.
type Answer struct {
	Columns []string    `json:"columns"`
	Rows    [][]*string `json:"rows"`
	Error   *Error      `json:"error,omitempty"`
}

// Error is a server error as the server sends it.
type Error struct {
	Number   uint16 `json:"number"`
	SQLState string `json:"sqlstate"`
	Message  string `json:"message"`
}

// Expect is what the recorded answers mean.
type Expect struct {
	Flavor   string    `json:"flavor"`
	File     string    `json:"file"`
	Pos      uint32    `json:"pos"`
	GTID     string    `json:"gtid"`
	Binlogs  []string  `json:"binlogs"`
	Replicas []Replica `json:"replicas"`
	// LagSeconds is the replica lag; null: the server is not a replica.
	LagSeconds *int `json:"lag_seconds"`
}

// Replica is one expected row of the replica list.
type Replica struct {
	ServerID uint32 `json:"server_id"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
}

// All loads every recording, sorted by name.
func All() ([]Server, error) {
	names, err := files.ReadDir("testdata")
	if err != nil {
		return nil, err
	}
	var out []Server
	for _, n := range names {
		s, err := Load(strings.TrimSuffix(n.Name(), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Load loads one recording by name (e.g. "mysql-8.4").
func Load(name string) (Server, error) {
	b, err := files.ReadFile(path.Join("testdata", name+".json"))
	if err != nil {
		return Server{}, err
	}
	var s Server
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Server{}, fmt.Errorf("recording %s: %w", name, err)
	}
	s.Name = name
	return s, nil
}

// Log is every statement sent to a replayed server, in order.
type Log struct {
	mu    sync.Mutex
	stmts []string
}

// Statements returns what was sent so far.
func (l *Log) Statements() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.stmts)
}

func (l *Log) add(s string) {
	l.mu.Lock()
	l.stmts = append(l.stmts, s)
	l.mu.Unlock()
}

// Open serves the recording through database/sql.
func Open(s Server) (*sql.DB, *Log) {
	log := &Log{}
	return sql.OpenDB(connector{s: s, log: log}), log
}

type connector struct {
	s   Server
	log *Log
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return conn(c), nil }
func (c connector) Driver() driver.Driver                        { return nil }

type conn connector

var variableQuery = regexp.MustCompile(`(?i)^SELECT @@(?:GLOBAL\.)?(\w+)$`)

func (c conn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q := strings.Join(strings.Fields(query), " ")
	c.log.add(q)
	if len(args) > 0 {
		return nil, fmt.Errorf("recorded %s: %q with arguments is not recorded", c.s.Name, q)
	}
	if a, ok := c.s.Answers[q]; ok {
		if a.Error != nil {
			return nil, &mysqldriver.MySQLError{Number: a.Error.Number, SQLState: [5]byte([]byte(a.Error.SQLState)), Message: a.Error.Message}
		}
		return &rows{a: a}, nil
	}
	switch strings.ToUpper(q) {
	case "SELECT VERSION(), @@VERSION_COMMENT":
		v, cm := c.s.Version, c.s.VersionComment
		return &rows{a: Answer{Columns: []string{"VERSION()", "@@version_comment"}, Rows: [][]*string{{&v, &cm}}}}, nil
	case "SELECT VERSION()":
		v := c.s.Version
		return &rows{a: Answer{Columns: []string{"VERSION()"}, Rows: [][]*string{{&v}}}}, nil
	}
	if m := variableQuery.FindStringSubmatch(q); m != nil {
		name := strings.ToLower(m[1])
		if v, ok := c.s.Variables[name]; ok {
			return &rows{a: Answer{Columns: []string{"@@" + name}, Rows: [][]*string{{v}}}}, nil
		}
		if slices.Contains(c.s.Unknown, name) {
			return nil, &mysqldriver.MySQLError{Number: 1193, SQLState: [5]byte([]byte("HY000")), Message: fmt.Sprintf("Unknown system variable '%s'", name)}
		}
	}
	return nil, fmt.Errorf("recorded %s has no answer for %q: record it in internal/sqlflavor/recorded/testdata/%s.json", c.s.Name, q, c.s.Name)
}

func (c conn) Ping(context.Context) error { return nil }
func (c conn) Prepare(query string) (driver.Stmt, error) {
	return nil, fmt.Errorf("recorded %s: prepared statements are not recorded (%q)", c.s.Name, query)
}
func (c conn) Close() error { return nil }
func (c conn) Begin() (driver.Tx, error) {
	return nil, fmt.Errorf("recorded %s: no transactions", c.s.Name)
}

type rows struct {
	a Answer
	i int
}

func (r *rows) Columns() []string { return r.a.Columns }
func (r *rows) Close() error      { return nil }
func (r *rows) Next(dest []driver.Value) error {
	if r.i >= len(r.a.Rows) {
		return io.EOF
	}
	row := r.a.Rows[r.i]
	r.i++
	for i := range dest {
		dest[i] = nil
		if row[i] != nil {
			dest[i] = []byte(*row[i])
		}
	}
	return nil
}
