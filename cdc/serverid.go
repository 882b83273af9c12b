package cdc

import (
	"context"
	"errors"
	"fmt"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/internal/sqlflavor"
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
		t.log.Warn(fmt.Sprintf("cannot list the source's replicas (%s) to check source.server_id is unused: grant %s to the source user; a conflict is still detected once streaming", src.dialect.ReplicaHosts, src.dialect.ReplicaHostsPrivilege), "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	own := replicaHost(t.cfg.TransactionalID())
	for _, h := range hosts {
		if h.ServerID == id && h.Host != own {
			return fatalf("source.server_id %d is already used by a replica of the source (host %q, port %d in %s): two binlog clients with one server_id disconnect each other. "+
				"Fix: set source.server_id to a number no other replica or binlog client of this source uses", id, h.Host, h.Port, src.dialect.ReplicaHosts)
		}
	}
	return nil
}

// replicaHosts lists the replicas registered with the source.
func (s *sourceDB) replicaHosts(ctx context.Context) ([]sqlflavor.ReplicaHost, error) {
	res, err := sqlflavor.Query(ctx, s.db, s.dialect.ReplicaHosts)
	if err != nil {
		return nil, err
	}
	return sqlflavor.ParseReplicaHosts(res)
}
