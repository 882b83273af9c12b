package cdc

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// sinkColumns are the columns TestDebeziumJDBCSink compares, in the order
// of the source table. The JDBC sink creates its table from the records'
// schema block, so these are the types whose mapping a consumer depends
// on: DECIMAL's scale and precision, DATETIME(6)'s microseconds, 4-byte
// UTF-8 and NULLs in every nullable column.
const sinkColumns = "id, name, balance, opened, qty, note"

const sinkTable = "CREATE TABLE `%s`.accounts (id INT NOT NULL, name VARCHAR(40) CHARACTER SET utf8mb4 NOT NULL," +
	" balance DECIMAL(12,3), opened DATETIME(6), qty BIGINT, note VARCHAR(100) CHARACTER SET utf8mb4, PRIMARY KEY (id))" +
	" DEFAULT CHARSET=utf8mb4"

// TestDebeziumJDBCSink feeds Debezium's JDBC sink connector (the plug-in
// and connector config `make bench-peers` runs: bench/peers) from
// readside's kafka.format: debezium topics with schemas, through an initial
// snapshot, inserts, updates to and from NULL, deletes, a primary key change
// and a multi-row transaction, and checks that the table the sink creates
// and keeps holds what the source holds, value for value as text.
func TestDebeziumJDBCSink(t *testing.T) {
	bed := testbed.Get(t)
	if testbed.BrokerKind() == "kfake" {
		t.Skip("the JDBC sink runs in Kafka Connect, whose Java clients need a real broker (E2E_BROKER=kafka)")
	}
	ctx := t.Context()
	if flavor, err := bed.MySQL.Flavor(ctx); err != nil || flavor != "mariadb" {
		t.Skipf("the sink's connection URL is MariaDB Connector/J's: a MariaDB source only (this one: %q, %v)", flavor, err)
	}
	src, err := bed.MySQL.CreateDatabase(ctx, "dbzsrc")
	if err != nil {
		t.Fatal(err)
	}
	dst, err := bed.MySQL.CreateDatabase(ctx, "dbzsink")
	if err != nil {
		t.Fatal(err)
	}
	q := func(stmts ...string) {
		t.Helper()
		for i := range stmts {
			stmts[i] = strings.ReplaceAll(stmts[i], "{T}", "`"+src+"`.accounts")
		}
		if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
			t.Fatal(err)
		}
	}
	// The sink creates its table in the database's default character set.
	q("ALTER DATABASE `"+dst+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
		fmt.Sprintf(sinkTable, src),
		"INSERT INTO {T} VALUES (1, 'Zoë 😀', 12345.678, '2024-02-29 13:14:15.123456', -9000000000, 'ünïcode ☃')",
		"INSERT INTO {T} (id, name) VALUES (2, 'nulls')",
		"INSERT INTO {T} VALUES (3, 'gone', -0.001, '1969-12-31 23:59:59.999999', 0, '')",
		"INSERT INTO {T} VALUES (4, 'mover', 1, '2000-01-01 00:00:00', 4, 'moves to 40')")

	cfg := bed.Config("", src+".accounts")
	cfg.Kafka.TopicPrefix = fmt.Sprintf("jdbc%09d", rand.IntN(1e9))
	cfg.Kafka.Partitions = 1
	cfg.Source.Snapshot.Mode = config.SnapshotInitial
	cfg.Kafka.Format = config.FormatDebezium
	cfg.Kafka.Debezium.Schemas.Enable = true // the JDBC sink types its columns from the schema block
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	startTailer(t, cfg)

	admin, err := mysql.ParseDSN(bed.MySQL.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join("..", "bench", "peers", "jdbc-sink.properties"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"NAME": cfg.Kafka.TopicPrefix, "TOPIC": cfg.Kafka.TopicPrefix + "." + src + ".accounts",
		"DB_PORT": strconv.Itoa(bed.MySQL.Port), "SINK_DB": dst, "DB_USER": admin.User, "DB_PASSWORD": admin.Passwd,
		"SINK_TABLE": "accounts_copy"}
	sink := setProperties(os.Expand(string(tmpl), func(k string) string {
		v, ok := vars[k]
		if !ok && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
			t.Fatalf("bench/peers/jdbc-sink.properties uses ${%s}, which this test does not fill in", k)
		}
		if !ok {
			return "${" + k + "}" // the comments' ${...}, as written
		}
		return v
	}),
		// bench-peers creates the sink's table; here the sink creates it
		// from the schema block, which is what is under test. Its name is
		// not the source table's: named as the source table (in another
		// database of the same server), the sink (3.5.0, Connector/J
		// 3.5.11) created no table and failed with "Table ... doesn't
		// exist".
		"schema.evolution", "basic",
		// readside writes in Kafka transactions.
		"consumer.override.isolation.level", "read_committed")
	dir := filepath.Join(t.TempDir(), "connect")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn, err := bed.StartConnect(ctx, dir, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Logf("Kafka Connect with the JDBC sink running after %s", time.Since(start).Round(time.Millisecond))

	same := func(stage string) {
		t.Helper()
		testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
			if err := conn.Check(); err != nil && !strings.Contains(err.Error(), "not running yet") {
				t.Fatalf("%s: %v", stage, err)
			}
			want, err := tableText(bed.MySQL.DB(), "`"+src+"`.accounts")
			if err != nil {
				t.Fatal(err)
			}
			got, err := tableText(bed.MySQL.DB(), "`"+dst+"`.accounts_copy")
			if err != nil {
				return false, fmt.Sprintf("%s: the sink's table: %v", stage, err)
			}
			if got != want {
				return false, fmt.Sprintf("%s: the sink's table differs from the source's\nsource:\n%s\nsink:\n%s", stage, want, got)
			}
			return true, ""
		})
	}
	same("after the snapshot")

	q("INSERT INTO {T} VALUES (10, 'Ελένη', -99999999.999, '2037-06-01 12:00:00.000001', 9223372036854775807, 'x')",
		"INSERT INTO {T} (id, name, qty) VALUES (11, 'later', 11)",
		"UPDATE {T} SET balance = -0.5, opened = '1999-12-31 23:59:59.5', note = NULL WHERE id = 1",
		"UPDATE {T} SET balance = 0, opened = '2024-01-01 00:00:00.000001', qty = 2, note = '𝄞' WHERE id = 2",
		"UPDATE {T} SET balance = NULL, opened = NULL, qty = NULL, note = NULL WHERE id = 10",
		"DELETE FROM {T} WHERE id = 3",
		"UPDATE {T} SET id = 40, name = 'moved' WHERE id = 4",
		"BEGIN",
		"INSERT INTO {T} (id, name, balance) VALUES (20, 'a', 1.1), (21, 'b', 2.2)",
		"UPDATE {T} SET balance = balance * 2 WHERE id IN (20, 21)",
		"DELETE FROM {T} WHERE id = 21",
		"COMMIT",
		"INSERT INTO {T} (id, name) VALUES (99, 'end')")
	same("after the live changes")
	var name, ddl string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SHOW CREATE TABLE `"+dst+"`.accounts_copy").Scan(&name, &ddl); err == nil {
		t.Logf("the sink's table:\n%s", ddl)
	}
}

// setProperties sets keys of a properties text (key, value, key, value…),
// replacing a key's line or adding one: a properties file read by Java
// keeps the last of duplicate keys, which a reader of the file would miss.
func setProperties(body string, kv ...string) string {
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for j, l := range lines {
			if strings.HasPrefix(l, kv[i]+"=") {
				lines[j], found = kv[i]+"="+kv[i+1], true
			}
		}
		if !found {
			lines = append(lines, kv[i]+"="+kv[i+1])
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// tableText is db's accounts table as text, one line per row in key order,
// NULL for a NULL.
func tableText(pool *sql.DB, table string) (string, error) {
	rows, err := pool.Query("SELECT " + sinkColumns + " FROM " + table + " ORDER BY id")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out strings.Builder
	vals := make([]sql.NullString, len(strings.Split(sinkColumns, ",")))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		for i, v := range vals {
			if i > 0 {
				out.WriteString(" | ")
			}
			if v.Valid {
				out.WriteString(strconv.Quote(v.String))
			} else {
				out.WriteString("NULL")
			}
		}
		out.WriteString("\n")
	}
	return out.String(), rows.Err()
}
