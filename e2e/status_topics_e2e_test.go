package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// TestStatusCountsEveryTopicRead: a projection with a join reads two
// topics, and a backlog in its parent's topic is lag as much as one in
// its own (the read rows wait for their sender's name). `readside status`
// counted only the projection's own topic: a join's or children's topic
// hundreds of thousands of records behind showed LAG 0. With the tailer
// running alone (no projector applies anything), the status's consumer
// lag must be every record of both topics, and its partitions must list
// the parent's topic.
func TestStatusCountsEveryTopicRead(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	p := newOpsPipeline(t, "sttopics", bed.Kafka.Brokers(), "")
	if err := bed.MySQL.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.users (id BIGINT PRIMARY KEY, name VARCHAR(40) NOT NULL)", p.src)); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "tables: ["+p.src+".messages]", "tables: ["+p.src+".messages, "+p.src+".users]", 1)
	text = strings.Replace(text, testbed.ChatProjectionYAML(p.src), testbed.ChatProjectionYAML(p.src)+
		fmt.Sprintf("    join:\n      - {from: %s.users, on: {id: sender_id}, columns: {sender: name}}\n", p.src), 1)
	if text == string(cfg) {
		t.Fatalf("the config was not rewritten:\n%s", cfg)
	}
	if err := os.WriteFile(p.cfgPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, p.logPath, "run", "--role", "tailer", "-c", p.cfgPath)
	defer d.stop(30 * time.Second)
	const users, messages = 30, 70
	for i := range users {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.users VALUES (%d, 'u%d')", p.src, i+1, i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range messages {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.messages VALUES (%d, %d, '2026-01-01 00:00:00', 'b')", p.src, i+1, 1+i%users)); err != nil {
			t.Fatal(err)
		}
	}
	var st struct {
		Projections []struct {
			Name        string `json:"name"`
			ConsumerLag int64  `json:"consumer_lag"`
			Partitions  []struct {
				Topic string `json:"topic"`
				Lag   int64  `json:"lag"`
			} `json:"partitions"`
		} `json:"projections"`
	}
	var out string
	testbed.Eventually(t, time.Minute, func() (bool, string) {
		var code int
		out, code = p.status(t, "--http", p.httpAddr, "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Projections) != 1 {
			return false, fmt.Sprintf("readside status --json (exit %d): %v\n%s", code, err, out)
		}
		return st.Projections[0].ConsumerLag == users+messages,
			fmt.Sprintf("consumer lag %d with nothing applied, want %d (%d messages and %d users):\n%s", st.Projections[0].ConsumerLag, users+messages, messages, users, out)
	})
	byTopic := map[string]int64{}
	for _, pt := range st.Projections[0].Partitions {
		byTopic[pt.Topic] += pt.Lag
	}
	if byTopic[p.prefix+"."+p.src+".users"] != users || byTopic[p.prefix+"."+p.src+".messages"] != messages {
		t.Errorf("the partitions' lag by topic is %v, want %d of the users' topic and %d of the messages':\n%s", byTopic, users, messages, out)
	}
	table, _ := p.status(t, "--http", p.httpAddr)
	if !strings.Contains(table, "reads/"+p.prefix+"."+p.src+".users/0 0/") {
		t.Errorf("readside status does not name the users' topic in the applied/end line:\n%s", table)
	}
}
