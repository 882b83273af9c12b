package projections

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/readside/readside/config"
)

// TestCookbook: every config in docs/cookbook.md loads, compiles and
// types against the source tables it describes, so the cookbook cannot
// rot.
func TestCookbook(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "cookbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n## ([^\n]*)\n.*?```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 5 {
		t.Fatalf("%d yaml blocks under headings in docs/cookbook.md, want the five patterns", len(blocks))
	}
	env := []string{"MYSQL_PASSWORD=x", "SINK_PASSWORD=y"}
	for _, b := range blocks {
		title, body := b[1], b[2]
		t.Run(title, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "readside.yaml")
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, env)
			if err != nil {
				t.Fatalf("config.Load: %v", err)
			}
			ps, err := Compile(cfg)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if len(ps) == 0 {
				t.Fatal("no projection")
			}
			// Typed against the source tables the pattern describes, as
			// readside plan types them against the live source.
			for _, p := range ps {
				src, ok := cookbookSources[p.SourceDB+"."+p.SourceTbl]
				if !ok {
					t.Fatalf("no source schema for %s.%s in cookbookSources", p.SourceDB, p.SourceTbl)
				}
				typeAll(t, p, src)
				if p.Aggregation != nil {
					errs := p.typeAggregates(src, &Types{Read: map[string]string{}})
					errs = append(errs, p.NullableKeys(func(col string) bool { return src.nullable[col] })...)
					if len(errs) > 0 {
						t.Fatalf("aggregates: %v", errs)
					}
				}
				read := func(db, tbl string) (*sourceTable, error) { return cookbookSources[db+"."+tbl], nil }
				if _, errs, err := p.checkChildren(read, src); err != nil || len(errs) > 0 {
					t.Fatalf("children: %v %v", err, errs)
				}
			}
		})
	}
}

// cookbookSources are the source tables docs/cookbook.md's patterns read,
// as information_schema describes them.
var cookbookSources = map[string]*sourceTable{
	"chat.messages": cookbookTable([][3]string{{"id", "bigint(20)"}, {"sender_id", "bigint(20)"}, {"created_at", "datetime(6)"},
		{"body", "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "null"}}),
	"shop.orders": cookbookTable([][3]string{{"id", "bigint(20)"}, {"customer_id", "bigint(20)", "null"}, {"total_cents", "bigint(20)"},
		{"status", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, {"created_at", "datetime(3)"}}),
	"shop.order_lines": cookbookTable([][3]string{{"id", "bigint(20)"}, {"order_id", "bigint(20)", "null"}, {"line_no", "int(11)"},
		{"sku", "varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, {"qty", "int(11)"}, {"price_cents", "bigint(20)"}}),
	"chat.dialog_messages": cookbookTable([][3]string{{"id", "bigint(20)"}, {"user_id", "bigint(20)"}, {"dialog_id", "bigint(20)"},
		{"body", "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "null"}}),
	"shop.products": cookbookTable([][3]string{{"id", "bigint(20)"}, {"attrs", "json"}, {"name", "varchar(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"price_cents", "bigint(20)"}}),
	"app.users": cookbookTable([][3]string{{"id", "bigint(20)"}, {"last_seen_at", "datetime(3)", "null"},
		{"status", "varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, {"name", "varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"bio", "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "null"}, {"avatar", "varbinary(255)", "null"}, {"created_at", "datetime(3)"}}),
	"sakila.film": cookbookKeyed([]string{"film_id"}, [][3]string{{"film_id", "smallint(5) unsigned"},
		{"title", "varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}}),
	"sakila.film_actor": cookbookKeyed([]string{"actor_id", "film_id"}, [][3]string{{"actor_id", "smallint(5) unsigned"},
		{"film_id", "smallint(5) unsigned"}, {"last_update", "timestamp"}}),
	"sakila.actor": cookbookKeyed([]string{"actor_id"}, [][3]string{{"actor_id", "smallint(5) unsigned"},
		{"first_name", "varchar(45) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}, {"last_name", "varchar(45) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"}}),
	"sakila.payment": cookbookKeyed([]string{"payment_id"}, [][3]string{{"payment_id", "smallint(5) unsigned"}, {"customer_id", "smallint(5) unsigned"},
		{"staff_id", "tinyint(3) unsigned"}, {"rental_id", "int(11)", "null"}, {"amount", "decimal(5,2)"}, {"payment_date", "datetime"}}),
}

// cookbookKeyed is cookbookTable keyed by pk.
func cookbookKeyed(pk []string, cols [][3]string) *sourceTable {
	t := cookbookTable(cols)
	t.pk = pk
	return t
}

// cookbookTable is a source table of columns {name, definition, "null"
// when nullable}, keyed by id.
func cookbookTable(cols [][3]string) *sourceTable {
	t := &sourceTable{types: map[string]string{}, nullable: map[string]bool{}, pk: []string{"id"}}
	for _, c := range cols {
		t.types[c[0]] = c[1]
		t.nullable[c[0]] = c[2] == "null"
		t.columns = append(t.columns, c[0])
	}
	return t
}
