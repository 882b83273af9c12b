package projections

import (
	"testing"

	"github.com/readside/readside/config"
)

// BenchmarkBuildComputed is BenchmarkBuild's poll mapped by a projection
// with a month-bucket key, computed columns and an expression filter:
// what evaluating expressions adds per event (BenchmarkBuild's plain
// columns take the raw path).
func BenchmarkBuildComputed(b *testing.B) {
	cfg := baseConfig()
	cfg.Source.Tables = []string{"src.narrow_insert"}
	cfg.Projections = map[string]config.Projection{"p_computed": {
		From: "src.narrow_insert", Sink: "reads", Key: []string{"month", "id"},
		Where: "a * 2 > 0",
		Columns: map[string]string{"month": "DATE_FORMAT(d, '%Y-%m')", "id": "id", "k": "k", "cents": "c * 100",
			"b_up": "UPPER(b)", "commit_us": "commit_us"},
	}}
	ps, err := Compile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := ps[0]
	typeAll(b, p, &sourceTable{
		types: map[string]string{"id": "bigint(20)", "k": "int(11)", "a": "int(11)", "c": "decimal(12,2)", "d": "datetime(6)", "commit_us": "bigint(20)",
			"b": "varchar(60) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		nullable: map[string]bool{}, pk: []string{"id"},
	})
	benchBuild(b, p)
}
