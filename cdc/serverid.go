package cdc

import (
	"context"
	"errors"
	"strconv"
	"strings"

	driver "github.com/go-sql-driver/mysql"
)

// replicaHost is the host name a tailer registers with the source: its
// transactional id, unique per tailer.
func replicaHost(txnID string) string { return "readside:" + txnID }

// preflightServerID refuses to connect with a server_id that the source
// itself or another registered replica already uses. Connecting anyway
// would take the id from the other replica (the source drops the older
// session), and the two would then take it from each other in turn. A
// registration under this tailer's own host name is its own earlier
// session (killed, not yet noticed by the source) and is no conflict.
func (t *Tailer) preflightServerID(ctx context.Context, src *sourceDB) error {
	id := t.cfg.Source.ServerID
	if id == src.serverID {
		return fatalf("source.server_id %d is the source's own server_id: give the tailer a server_id no server or replica in the topology uses", id)
	}
	hosts, err := src.replicaHosts(ctx)
	var me *driver.MySQLError
	if errors.As(err, &me) && (me.Number == 1227 || me.Number == 1142) { // access denied / command denied
		t.log.Warn("cannot list the source's replicas to check source.server_id is unused (grant REPLICATION MASTER ADMIN on MariaDB, REPLICATION SLAVE on MySQL); a conflict is still detected once streaming", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	own := replicaHost(t.cfg.TransactionalID())
	for _, h := range hosts {
		if h.serverID == id && h.host != own {
			return fatalf("source.server_id %d is already used by a replica of the source (host %q, port %d in SHOW SLAVE HOSTS): two binlog clients with one server_id disconnect each other. "+
				"Fix: set source.server_id to a number no other replica or binlog client of this source uses", id, h.host, h.port)
		}
	}
	return nil
}

type replicaHostRow struct {
	serverID uint32
	host     string
	port     int
}

// replicaHosts lists the replicas registered with the source.
func (s *sourceDB) replicaHosts(ctx context.Context) ([]replicaHostRow, error) {
	rows, err := s.db.QueryContext(ctx, "SHOW SLAVE HOSTS")
	var me *driver.MySQLError
	if errors.As(err, &me) && me.Number == 1064 { // MySQL >= 8.4 dropped the old syntax
		rows, err = s.db.QueryContext(ctx, "SHOW REPLICAS")
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	idx := map[string]int{}
	for i, c := range cols {
		idx[strings.ToLower(c)] = i
	}
	var out []replicaHostRow
	for rows.Next() {
		vals, err := scanRaw(rows)
		if err != nil {
			return nil, err
		}
		var r replicaHostRow
		if i, ok := idx["server_id"]; ok {
			n, _ := strconv.ParseUint(string(vals[i]), 10, 32)
			r.serverID = uint32(n)
		}
		if i, ok := idx["host"]; ok {
			r.host = string(vals[i])
		}
		if i, ok := idx["port"]; ok {
			r.port, _ = strconv.Atoi(string(vals[i]))
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
