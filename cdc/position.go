package cdc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Position is a place in the source's binlog at a transaction boundary: the
// GTID set executed up to and including the transaction (the primary way to
// resume, valid across failover) and the server-local file and offset just
// after its commit event (used when the source has no GTIDs).
type Position struct {
	Flavor string `json:"flavor"` // "mysql" or "mariadb"
	GTID   string `json:"gtid"`   // GTID set; MariaDB: one domain-server-seq per domain
	File   string `json:"file"`
	Pos    uint32 `json:"pos"`
}

// String renders the position for logs and errors.
func (p Position) String() string {
	if p.GTID != "" {
		return fmt.Sprintf("gtid %s (%s:%d)", p.GTID, p.File, p.Pos)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Pos)
}

// IsZero reports whether the position is unset.
func (p Position) IsZero() bool { return p.GTID == "" && p.File == "" }

// gtidSet parses the GTID set for the position's flavor.
func (p Position) gtidSet() (mysql.GTIDSet, error) {
	set, err := mysql.ParseGTIDSet(p.Flavor, p.GTID)
	if err != nil {
		return nil, fmt.Errorf("parsing %s GTID set %q: %w", p.Flavor, p.GTID, err)
	}
	return set, nil
}

// parsePosition parses the forms an operator types: "file:pos" or a GTID set
// ("0-1-42,1-1-7" for MariaDB, "uuid:1-42" for MySQL).
func parsePosition(flavor, s string) (Position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Position{}, errors.New("empty position")
	}
	if file, pos, ok := strings.Cut(s, ":"); ok && !strings.Contains(pos, "-") && strings.Contains(file, ".") {
		n, err := strconv.ParseUint(pos, 10, 32)
		if err != nil {
			return Position{}, fmt.Errorf("position %q: offset %q is not a number", s, pos)
		}
		return Position{Flavor: flavor, File: file, Pos: uint32(n)}, nil
	}
	p := Position{Flavor: flavor, GTID: s}
	set, err := p.gtidSet()
	if err != nil {
		return Position{}, err
	}
	p.GTID = set.String()
	return p, nil
}

// Contains reports whether p's GTID set includes all of q's: a tailer at p
// has seen every transaction q has. Positions without GTIDs compare by file
// and offset, which is only meaningful on one server.
func (p Position) Contains(q Position) (bool, error) {
	if p.GTID != "" && q.GTID != "" {
		ps, err := p.gtidSet()
		if err != nil {
			return false, err
		}
		qs, err := q.gtidSet()
		if err != nil {
			return false, err
		}
		return ps.Contain(qs), nil
	}
	if p.File != q.File {
		return p.File > q.File, nil
	}
	return p.Pos >= q.Pos, nil
}
