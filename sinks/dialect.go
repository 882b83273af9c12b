package sinks

import (
	"strconv"
	"strings"
)

// dialect is the upsert syntax of a sink server.
type dialect struct {
	// rowAlias: MySQL 8.0.19+, where VALUES(col) in ON DUPLICATE KEY
	// UPDATE is deprecated; the new row is named by an alias instead.
	rowAlias bool
}

var (
	mariaDB = dialect{}
	mysql8  = dialect{rowAlias: true}
)

// rowAliasName is the alias of the new row in MySQL 8 upserts.
const rowAliasName = "_rs_new"

// newRow is the value column col (quoted, or a plain bookkeeping name)
// would take from the inserted row, inside ON DUPLICATE KEY UPDATE.
func (d dialect) newRow(col string) string {
	if d.rowAlias {
		return rowAliasName + "." + col
	}
	return "VALUES(" + col + ")"
}

// onDuplicate opens an upsert's assignments, after its rows (MySQL 8
// names the new row there).
func (d dialect) onDuplicate() string {
	if d.rowAlias {
		return " AS " + rowAliasName + " ON DUPLICATE KEY UPDATE "
	}
	return " ON DUPLICATE KEY UPDATE "
}

// shareLock is the locking clause of a read that holds a share lock to
// commit: MySQL 8 spells it FOR SHARE (LOCK IN SHARE MODE is deprecated
// there), MariaDB only knows LOCK IN SHARE MODE.
func (d dialect) shareLock() string {
	if d.rowAlias {
		return " FOR SHARE"
	}
	return " LOCK IN SHARE MODE"
}

// dialectOf is the dialect of a server by its VERSION().
func dialectOf(version string) dialect {
	return dialect{rowAlias: usesRowAlias(version)}
}

// usesRowAlias reports whether a server (its VERSION()) wants the row
// alias: MySQL 8.0.19 and later, not MariaDB.
func usesRowAlias(version string) bool {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return false
	}
	parts := strings.SplitN(strings.SplitN(version, "-", 2)[0], ".", 3)
	if len(parts) < 3 {
		return false
	}
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(parts[1])
	patch, _ := strconv.Atoi(parts[2])
	return major > 8 || major == 8 && (minor > 0 || patch >= 19)
}
