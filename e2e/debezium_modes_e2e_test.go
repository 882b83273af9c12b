package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestDebeziumModesInExpressions: under the Debezium modes that change a
// value's JSON form — bigint.unsigned.handling.mode precise (a BIGINT
// UNSIGNED as a Decimal of scale 0, read back as a DECIMAL's text) and
// decimal.handling.mode double (a DECIMAL as a double) — projections that
// compute over those columns (where, sum, min, count(distinct)) read
// them as the source's types, with the schema block and without it.
// Values up to 2^64-1; the read tables equal the source's GROUP BY.
func TestDebeziumModesInExpressions(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db, err := bed.MySQL.CreateDatabase(ctx, "dbzmodes")
	if err != nil {
		t.Fatal(err)
	}
	tbl := "`" + db + "`.items"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, cat INT NOT NULL, big BIGINT UNSIGNED NULL, price DECIMAL(10,2) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
	bigs := []any{uint64(0), uint64(1) << 63, uint64(18446744073709551615), uint64(18446744073709551614), uint64(42), nil}
	write := func(n int) {
		for range n {
			q := "INSERT INTO " + tbl + " VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE cat = VALUES(cat), big = VALUES(big), price = VALUES(price)"
			args := []any{1 + rng.IntN(40), rng.IntN(4), bigs[rng.IntN(len(bigs))], fmt.Sprintf("%d.%02d", rng.IntN(1000)-500, rng.IntN(100))}
			if rng.IntN(8) == 0 {
				q, args = "DELETE FROM "+tbl+" WHERE id = ?", []any{1 + rng.IntN(40)}
			}
			if _, err := bed.MySQL.DB().ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	write(60)
	for _, schemas := range []bool{true, false} {
		t.Run(fmt.Sprintf("schemas.enable=%v", schemas), func(t *testing.T) {
			sink, err := bed.MySQL.CreateDatabase(ctx, "dbzmodes_r")
			if err != nil {
				t.Fatal(err)
			}
			prefix := fmt.Sprintf("rsmodes%09d", rand.IntN(1e9))
			dir := t.TempDir()
			cfgPath, logPath := filepath.Join(dir, "readside.yaml"), filepath.Join(dir, "readside.log")
			cfg := fmt.Sprintf(`source:
  dsn: "%s"
  server_id: %d
  tables: [%[3]s.items]
kafka:
  brokers: [%s]
  topic_prefix: %s
  format: debezium
  debezium: {schemas.enable: %v, bigint.unsigned.handling.mode: precise, decimal.handling.mode: double}
data_dir: %s
sinks:
  reads: {dsn: "%s"}
projections:
  by_cat:
    from: %[3]s.items
    sink: reads
    where: "big < 18446744073709551615"
    group_by: [cat]
    aggregates: {n: "count(*)", big_sum: "sum(big)", bigs: "count(distinct big)", cheapest: "min(price)", total: "sum(price)"}
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), db, strings.Join(bed.Kafka.Brokers(), ", "), prefix, schemas, filepath.Join(dir, "data"), bed.MySQL.AdminDSN()+sink)
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, logPath, "run", "-c", cfgPath)
			write(60)
			want := "SELECT cat, COUNT(*), SUM(big), COUNT(DISTINCT big), MIN(price), SUM(price) FROM " + tbl + " WHERE big < 18446744073709551615 GROUP BY cat ORDER BY cat"
			got := "SELECT cat, n, big_sum, bigs, cheapest, total FROM `" + sink + "`.by_cat ORDER BY cat"
			testbed.Eventually(t, time.Minute, func() (bool, string) {
				w, g := queryText(t, bed.MySQL.DB(), want), queryText(t, bed.MySQL.DB(), "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+sink+"' AND TABLE_NAME = 'by_cat'")
				if g != "" {
					g = queryText(t, bed.MySQL.DB(), got)
				}
				return w == g, fmt.Sprintf("the read table differs from the source's GROUP BY:\n got %s\nwant %s\nlog: %s", g, w, tail(logPath))
			})
			if code := d.stop(30 * time.Second); code != 0 {
				t.Errorf("exit %d after SIGTERM; log:\n%s", code, tail(logPath))
			}
		})
	}
}
