package event

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestTopicForExamples(t *testing.T) {
	long := strings.Repeat("ü", 64)
	cases := []struct {
		why, db, table, want string
	}{
		{"plain names keep today's topic", "shop", "orders", "readside.shop.orders"},
		{"underscores and dashes are Kafka-legal and stay", "my-shop", "order_items", "readside.my-shop.order_items"},
		{"a reserved word is an ordinary name to Kafka", "select", "order", "readside.select.order"},
		{"a space is escaped as its hex byte, and the doubled dot marks an escaped pair", "shop", "order items", "readside..shop.order_20items"},
		{"the other name of an escaped pair doubles its underscores", "my_shop", "a b", "readside..my__shop.a_20b"},
		{"quotes and backticks", "q", "it's \"x\" `y`", "readside..q.it_27s_20_22x_22_20_60y_60"},
		{"non-ASCII letters by their UTF-8 bytes", "ünï", "日本", "readside.._c3_bcn_c3_af._e6_97_a5_e6_9c_ac"},
		{"a dot inside a name cannot pass for the separator", "a.b", "c", "readside..a_2eb.c"},
		{"an empty name (never a MySQL name) still maps somewhere distinct", "", "t", "readside...t"},
		{"too long: cut to 231 and hash-suffixed", long, "t", ("readside.." + strings.Repeat("_c3_bc", 64))[:231] + "..cedc44a3665a683f"},
	}
	for _, c := range cases {
		got := TopicFor("readside", c.db, c.table)
		if got != c.want {
			t.Errorf("%s: TopicFor(readside, %q, %q) = %q, want %q", c.why, c.db, c.table, got, c.want)
		}
		if err := kafkaLegal(got); err != nil {
			t.Errorf("%s: %q: %v", c.why, got, err)
		}
	}
}

// TestTopicForKeepsTodaysTopics: every name made of what Kafka accepts
// (and no dot, which config cannot express in source.tables) maps exactly
// as prefix.db.table did, so upgrading moves no existing topic.
func TestTopicForKeepsTodaysTopics(t *testing.T) {
	typical := []string{"shop", "orders", "order_items", "OrderItems", "t1", "_hidden", "a-b", "x", "customers_2024", "ORDER", "select", strings.Repeat("n", 64)}
	for _, prefix := range []string{"readside", "prod.cdc", "rs-1_x"} {
		for _, db := range typical {
			for _, table := range typical {
				if got, was := TopicFor(prefix, db, table), prefix+"."+db+"."+table; got != was {
					t.Errorf("TopicFor(%q, %q, %q) = %q, want today's %q", prefix, db, table, got, was)
				}
			}
		}
	}
}

// TestTopicForInjectiveRandom maps many random pairs drawn from an
// alphabet rich in the characters that matter (separators, the escape
// character, bytes Kafka refuses, multi-byte letters) and fails on any
// two pairs sharing a topic or any topic Kafka would refuse.
func TestTopicForInjectiveRandom(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := testingSeed(); s != 0 {
		seed = s
	}
	t.Logf("seed %d (set READSIDE_TOPIC_SEED to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []string{"a", "b", "_", "-", ".", "_2e", "__", " ", "`", "'", "\"", "ü", "日", "5", "f", "\x00", "\xff"}
	name := func() string {
		var b strings.Builder
		for n := rng.IntN(8); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		if rng.IntN(20) == 0 {
			// Long enough to be cut and hash-suffixed.
			b.WriteString(strings.Repeat(alphabet[rng.IntN(len(alphabet))], 40+rng.IntN(60)))
		}
		return b.String()
	}
	seen := map[string][2]string{}
	for range 200_000 {
		db, table := name(), name()
		topic := TopicFor("rs", db, table)
		if err := kafkaLegal(topic); err != nil {
			t.Fatalf("TopicFor(rs, %q, %q) = %q: %v", db, table, topic, err)
		}
		if prev, ok := seen[topic]; ok && prev != [2]string{db, table} {
			t.Fatalf("(%q, %q) and (%q, %q) share the topic %q", prev[0], prev[1], db, table, topic)
		}
		seen[topic] = [2]string{db, table}
	}
}

func testingSeed() uint64 {
	s, _ := strconv.ParseUint(strings.TrimSpace(os.Getenv("READSIDE_TOPIC_SEED")), 10, 64)
	return s
}

// FuzzTopicFor: every uncut topic decodes back to the pair it came from
// (so no two pairs share it) and every topic is Kafka-legal.
func FuzzTopicFor(f *testing.F) {
	for _, s := range [][2]string{{"shop", "orders"}, {"a b", "c"}, {"a_b", "c"}, {"a", "b_c"}, {"ü", "日本"}, {"", ""}, {"a.b", "c"}, {"_20", "x"}, {strings.Repeat("é", 64), "t"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, db, table string) {
		topic := TopicFor("rs", db, table)
		if err := kafkaLegal(topic); err != nil {
			t.Fatalf("TopicFor(rs, %q, %q) = %q: %v", db, table, topic, err)
		}
		if len(topic) == MaxTopicLen && topic[cutTopicLen:cutTopicLen+2] == ".." {
			return // cut: distinct by hash, checked by the random test
		}
		gotDB, gotTable, err := decodeTopic("rs", topic)
		if err != nil {
			t.Fatalf("TopicFor(rs, %q, %q) = %q does not decode: %v", db, table, topic, err)
		}
		if gotDB != db || gotTable != table {
			t.Fatalf("TopicFor(rs, %q, %q) = %q decodes to (%q, %q)", db, table, topic, gotDB, gotTable)
		}
	})
}

// decodeTopic inverts TopicFor for uncut topics: the proof, in code, that
// the mapping loses nothing.
func decodeTopic(prefix, topic string) (db, table string, err error) {
	rest, ok := strings.CutPrefix(topic, prefix+".")
	if !ok {
		return "", "", fmt.Errorf("no prefix")
	}
	if escaped, ok := strings.CutPrefix(rest, "."); ok {
		d, t, ok := strings.Cut(escaped, ".")
		if !ok || strings.Contains(t, ".") {
			return "", "", fmt.Errorf("escaped pair %q: want exactly one separator", escaped)
		}
		if db, err = unescapeTopicPart(d); err == nil {
			table, err = unescapeTopicPart(t)
		}
		return db, table, err
	}
	db, table, ok = strings.Cut(rest, ".")
	if !ok || !plainTopicPart(db) || !plainTopicPart(table) {
		return "", "", fmt.Errorf("plain pair %q: want two plain names", rest)
	}
	return db, table, nil
}

func unescapeTopicPart(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case topicKeeps(s[i]):
			b.WriteByte(s[i])
		case s[i] == '_' && i+1 < len(s) && s[i+1] == '_':
			b.WriteByte('_')
			i++
		case s[i] == '_' && i+2 < len(s):
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil || strings.ToLower(s[i+1:i+3]) != s[i+1:i+3] {
				return "", fmt.Errorf("bad escape %q", s[i:i+3])
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", fmt.Errorf("bad byte %q at %d", s[i], i)
		}
	}
	return b.String(), nil
}

// kafkaLegal is Kafka's own rule (Topic.validate): 1 to 249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func kafkaLegal(topic string) error {
	if topic == "" || topic == "." || topic == ".." || len(topic) > MaxTopicLen {
		return fmt.Errorf("length %d or a bare dot", len(topic))
	}
	for i := 0; i < len(topic); i++ {
		if c := topic[i]; !topicKeeps(c) && c != '_' && c != '.' {
			return fmt.Errorf("byte %q at %d", c, i)
		}
	}
	return nil
}

func TestTopicCollisions(t *testing.T) {
	cases := []struct {
		why    string
		tables []string
		want   int
	}{
		{"distinct names", []string{"shop.orders", "shop.items", "crm.orders"}, 0},
		{"'.' and '_' swapped between db and table", []string{"shop.order_items", "shop_order.items"}, 1},
		{"the same table listed twice is no collision", []string{"shop.orders", "shop.orders"}, 0},
		{"escaped names can collide with plain ones too", []string{"_shop.a_20b", "shop.a b"}, 1},
	}
	for _, c := range cases {
		got := TopicCollisions("readside", c.tables)
		if len(got) != c.want {
			t.Errorf("%s: TopicCollisions(%q) = %q, want %d", c.why, c.tables, got, c.want)
		}
	}
}
