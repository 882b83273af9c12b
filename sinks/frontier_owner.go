package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	driver "github.com/go-sql-driver/mysql"
)

// The frontier's owner mark: a consistent commit holds the frontier row's
// lock from its start to its COMMIT, and an applier frozen inside a
// commit (SIGSTOP, a VM paused, a process stuck in a page fault) holds it
// until the server drops its connection — with MySQL's defaults, the
// 8-hour wait_timeout. The applier that took the sink over meanwhile
// only sees its own lock wait time out, every innodb_lock_wait_timeout
// (50 s), forever: safe (the frontier check fences the old one), but the
// sink stops.
//
// So the commit that holds the row also holds a named lock (GET_LOCK) on
// the same connection, taken in the statement that locks the row and
// released with its COMMIT or ROLLBACK, in the same packet (pipeline;
// endReleasesLocks). A commit whose frontier lock wait times out asks the
// server who holds the mark (IS_USED_LOCK): that connection is the commit
// in its way, of an applier that lost the sink (the one that holds the
// sink's checkpoint partition is the one waiting), and it ends it with
// KILL CONNECTION, which rolls that commit back and releases the row.
// Its own commit then starts again and takes the row. The old applier,
// should it wake, finds its connection gone and then the frontier moved
// (ErrFrontierMoved), and writes nothing.
//
// Only a connection that holds the mark is ever ended: another session
// holding the row (an operator's SELECT … FOR UPDATE, a readside command)
// holds no mark, and the wait goes on as before. Ending another user's
// connection needs CONNECTION ADMIN (MariaDB) / CONNECTION_ADMIN (MySQL);
// without it the error says so.

// ownerMark is the SQL expression naming the sink's mark, taking the sink
// name as its one parameter: per database and sink (named locks are
// server-wide), within the 64 characters a lock name may have.
const ownerMark = "CONCAT('readside_frontier_', LEFT(SHA1(CONCAT(DATABASE(), '.', ?)), 32))"

// lockWaitTimeout reports the server's "Lock wait timeout exceeded".
func lockWaitTimeout(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1205
}

// endFrozenOwner ends the connection holding sink's owner mark, if any,
// after a commit's frontier lock wait timed out, and says what it did for
// the retried error (the applier logs it): "" when no connection holds
// the mark.
func (s *MySQL) endFrozenOwner(ctx context.Context, sink string) string {
	var owner sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT IS_USED_LOCK("+ownerMark+")", sink).Scan(&owner); err != nil {
		return fmt.Sprintf("asking which connection holds the frontier's owner mark: %v", err)
	}
	if !owner.Valid {
		return ""
	}
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", owner.Int64)); err != nil {
		var me *driver.MySQLError
		if !errors.As(err, &me) || me.Number != 1094 { // 1094: ended already
			return fmt.Sprintf("the commit in the way (sink connection %d, of an applier that lost the sink: frozen or cut off from Kafka) could not be ended: %v; "+
				"give the sink user CONNECTION ADMIN (MariaDB) or CONNECTION_ADMIN (MySQL), or stop that process", owner.Int64, err)
		}
	}
	return fmt.Sprintf("ended sink connection %d, the commit of an applier that lost the sink (frozen or cut off from Kafka) and still held its frontier: the next attempt commits in its place", owner.Int64)
}
