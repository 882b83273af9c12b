package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// TestPlanComputed: `readside plan` prints each computed column with its
// expression and the read column type worked out against the live
// source (or column_types' override), and the CREATE TABLE uses that
// type; a projection whose expressions do not fit the source is refused
// with every problem at once, each naming the column, the expression,
// the position and the fix.
func TestPlanComputed(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "planc")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.messages (id BIGINT PRIMARY KEY, sender_id INT NOT NULL, "+
		"created_at DATETIME(6) NOT NULL, score INT, status VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	plan := func(columns string) (stdout, stderr string, err error) {
		cfg := fmt.Sprintf(`source:
  dsn: %q
  server_id: %d
  tables: [%[3]s.messages]
kafka:
  brokers: [127.0.0.1:1]
sinks:
  reads:
    dsn: "nobody:pw@tcp(127.0.0.1:1)/reads"
projections:
  by_month:
    from: %[3]s.messages
    sink: reads
    key: [sender_id, month, id]
    column_types: {half: "decimal(12,1)"}
    columns: %[4]s
`, bed.MySQL.ReplDSN(), testbed.NewServerID(), src, columns)
		path := filepath.Join(t.TempDir(), "readside.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, readsideBinary(t), "plan", "-c", path)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, stderr, err := plan(`{sender_id: sender_id, month: "CAST(created_at AS CHAR(7))", id: id, score2: "COALESCE(score, 0) * 2", half: "score / 2"}`)
	if err != nil {
		t.Fatalf("readside plan: %v\n%s", err, stderr)
	}
	t.Logf("readside plan:\n%s", out)
	for _, want := range []string{
		"-- computed month = CAST(created_at AS CHAR(7)): varchar(7) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL\n",
		"-- computed score2 = COALESCE(score, 0) * 2: bigint(12) NOT NULL\n",
		"-- computed half = score / 2: decimal(12,1) NULL\n",
		"`month` varchar(7) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL",
		"`half` decimal(12,1) NULL",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("readside plan output lacks %q", want)
		}
	}
	_, stderr, err = plan(`{sender_id: sender_id, month: "CAST(created_at AS CHAR(7)) + nope", id: id, score2: "score * 2 +", half: "score / 2"}`)
	if exitCode(err) == 0 {
		t.Fatal("readside plan accepted expressions that do not fit the source")
	}
	t.Logf("readside plan (bad expressions): %v\n%s", err, stderr)
	for _, want := range []string{
		`projections.by_month.columns.month "CAST(created_at AS CHAR(7)) + nope": at offset 30: column "nope" is not in the source table: name one of its columns (its columns: id, sender_id, created_at, score, status)`,
		`projections.by_month.columns.score2 "score * 2 +": neither a source column (its columns: id, sender_id, created_at, score, status) nor an expression: at offset 11: `,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("readside plan's refusal lacks %q", want)
		}
	}
}
