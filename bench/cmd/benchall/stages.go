package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/cdc"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// rate is a throughput with its cost.
type rate struct {
	PerS        float64 `json:"per_s"`
	Seconds     float64 `json:"seconds"`
	CPUPer1000  float64 `json:"cpu_s_per_1000,omitempty"`
	PeakRSSMiB  float64 `json:"peak_rss_mib,omitempty"`
	Load1       float64 `json:"load1"`
	Description string  `json:"description,omitempty"`
	// CommitShare is the share of the drain the tailer spent flushing and
	// committing Kafka transactions (readside_produce_commit_seconds).
	CommitShare float64 `json:"commit_share,omitempty"`
}

// drained fills in the rate of events source events drained in d, with
// cpu seconds of the process's CPU.
func (r *rate) drained(events float64, d time.Duration, cpu float64) {
	r.Seconds = d.Seconds()
	r.PerS = events / r.Seconds
	r.CPUPer1000 = cpu / events * 1000
}

type b2Point struct {
	BatchRows   int     `json:"batch_rows"`
	Connections int     `json:"connections"`
	PerS        float64 `json:"per_s"`
}

type workloadResult struct {
	Workload       workload  `json:"workload"`
	AvgRecordBytes float64   `json:"avg_record_bytes"`
	B0             rate      `json:"b0_raw_parse"`
	B1             rate      `json:"b1_raw_produce"`
	B2             rate      `json:"b2_raw_upsert"`
	B2Sweep        []b2Point `json:"b2_sweep"`
	Tailer         rate      `json:"tailer_drain"`
	Projector      rate      `json:"projector_drain"` // in source events
	ProjectorRows  float64   `json:"projector_applied_rows_per_s"`
	TailerVsLimit  float64   `json:"tailer_vs_min_b0_b1"`
	ProjectorVsB2  float64   `json:"projector_vs_b2"`
	// B2Join is "B2 with join statements" (bench/rawupsert -joins), only
	// for a projection with joins: every record, parents included, built
	// by the projector's Build and applied with the join's parent locks,
	// parent state and fan-out. Counted in records (source events).
	B2Join            *rate     `json:"b2_join_statements,omitempty"`
	B2JoinSweep       []b2Point `json:"b2_join_sweep,omitempty"`
	ProjectorVsB2Join float64   `json:"projector_vs_b2_join,omitempty"`
	// B2JoinCheck compares the rows B2-join left with the projector's.
	B2JoinCheck string `json:"b2_join_check,omitempty"`
	// B2Check compares the group rows an aggregate's B2 left with the
	// projector's read table (count and checksum, benchio.TableChecksum).
	B2Check string `json:"b2_check,omitempty"`
	// ChildrenCheck compares, per children entry, the projector's counts
	// and array lengths with the source's children of existing parents.
	ChildrenCheck string  `json:"children_check,omitempty"`
	BacklogWriteS float64 `json:"backlog_write_s"`
	// Latency is the workload's own latency step (workload.Live).
	Latency        *workloadLatency `json:"workload_latency,omitempty"`
	TailerProfiled bool             `json:"tailer_in_process_profiled,omitempty"`
}

func tableName(w workload) string { return w.Name }

func (e *env) runWorkload(ctx context.Context, w workload) (workloadResult, error) {
	r := workloadResult{Workload: w}
	prefix := prefixFor(tableName(w))
	if w.Base != "" {
		// Its base's tables again, in databases of its own.
		restore, err := e.ownDatabases(ctx, w.Name, w.Consistency)
		if err != nil {
			return r, err
		}
		defer restore()
	}
	src, err := e.newSource(ctx, w.stream(), prefix)
	if err != nil {
		return r, err
	}
	cfgPath, cfg, proj := src.cfgPath, src.cfg, src.proj
	// The tailer's first start checkpoints at the end of the binlog, so the
	// preload is not part of the backlog.
	if err := e.primeTailer(ctx, cfgPath, prefix); err != nil {
		return r, err
	}
	start, err := e.bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return r, err
	}
	t := time.Now()
	counts, err := src.write(ctx)
	if err != nil {
		return r, err
	}
	r.BacklogWriteS = time.Since(t).Seconds()
	end, err := e.bed.MySQL.CurrentPosition(ctx)
	if err != nil {
		return r, err
	}
	// B0 and the tailer read the binlog the backlog just wrote; its pages
	// are flushed first so neither competes with InnoDB's page cleaner.
	e.settle(ctx, w.Name+": B0 and the tailer drain")
	if w.transactional() && counts != nil {
		// Its limits are its base's (the same stream): the figures that
		// matter are its drains and latency against the base's.
		return e.runTransactional(ctx, w, r, src, counts, end)
	}

	// B0 (bench/rawparse): go-mysql's raw parse of the same binlog range,
	// rows decoded and discarded, best of three (one run lasts about a
	// second, so one neighbour's burst skews it). It counts the range's
	// row events, which sizes a backlog written by an external tool.
	b0, err := e.runLimit(ctx, "rawparse", "-config", cfgPath, "-from", fmt.Sprintf("%s:%d", start.File, start.Pos), "-to", fmt.Sprintf("%s:%d", end.File, end.Pos))
	if err != nil {
		return r, err
	}
	r.B0 = b0.rate
	events := 0
	for _, n := range counts {
		events += n
	}
	if counts == nil {
		events, counts = b0.Events, map[string]int{proj.Topic: b0.Events}
	} else if b0.Events != events {
		logf("warning: %s wrote %d row events, the binlog range holds %d", w.Name, events, b0.Events)
	}
	w.Events, r.Workload = events, w
	r.B0.PerS = float64(events) / r.B0.Seconds

	// The tailer drains the backlog into Kafka.
	if r.Tailer, err = e.tailerDrain(ctx, cfgPath, cfg.Kafka.TopicPrefix, proj.Topic, end, w); err != nil {
		return r, err
	}
	r.TailerProfiled = e.profile != ""

	// The records the tailer published, in a file: B1 produces the same
	// ones again, B2 applies their writes.
	var recs []*kgo.Record
	for topic, n := range counts {
		rs, err := e.readTopic(ctx, topic, n)
		if err != nil {
			return r, err
		}
		recs = append(recs, rs...)
	}
	var bytes int
	for _, rec := range recs {
		bytes += len(rec.Key) + len(rec.Value)
	}
	r.AvgRecordBytes = float64(bytes) / float64(len(recs))
	recFile := filepath.Join(e.dir, prefix+".records")
	if err := benchio.WriteRecords(recFile, recs); err != nil {
		return r, err
	}
	recs = nil
	// B1 (bench/rawproduce): best of three, each to its own topic.
	b1, err := e.runLimit(ctx, "rawproduce", "-config", cfgPath, "-records", recFile, "-topic", prefix)
	if err != nil {
		return r, err
	}
	r.B1 = b1.rate
	// B2 (bench/rawupsert): the projection's writes, not coalesced, swept.
	// An aggregate's or nested children's B2 is its own (src.b2: later
	// flags win).
	b2args := append([]string{"-config", cfgPath, "-projection", proj.Name, "-records", recFile, "-sweep", limitSweep, "-settle", settleLimit.String()}, src.b2...)
	b2, err := e.runLimit(ctx, "rawupsert", b2args...)
	if err != nil {
		return r, err
	}
	r.B2, r.B2Sweep = b2.rate, b2.Sweep
	// B2 with join statements: the same sink work as the projector's
	// (parent locks, parent state, fan-out), for the projector/B2 ratio
	// of a join to compare like with like.
	var b2j limitResult
	// (An aggregate's joins give its groups: its own B2 writes their state.)
	if len(proj.Joins) > 0 && !slices.Contains(src.b2, "-aggregate") {
		bj, err := e.runLimit(ctx, "rawupsert", "-joins", "-config", cfgPath, "-projection", proj.Name, "-records", recFile, "-sweep", limitSweep, "-settle", settleLimit.String())
		if err != nil {
			return r, err
		}
		r.B2Join, r.B2JoinSweep = &bj.rate, bj.Sweep
		b2j = bj
	}

	// The projector drains the topic (the tailer is stopped).
	if err := e.createReadTable(ctx, proj); err != nil {
		return r, err
	}
	e.settle(ctx, w.Name+": the projector drain")
	if r.Projector, r.ProjectorRows, err = e.projectorDrain(ctx, cfgPath, proj, w.Events, false); err != nil {
		return r, err
	}
	// The same records must leave the same rows: B2-join did the
	// projector's work, not less.
	if r.B2Join != nil {
		rows, joined, err := benchio.JoinedRows(ctx, e.sink.DB(), proj)
		if err != nil {
			return r, err
		}
		if rows == b2j.ReadRows && slices.Equal(joined, b2j.JoinedRows) {
			r.B2JoinCheck = fmt.Sprintf("same rows as the projector: %d read rows, %v showing a parent (per join)", rows, joined)
		} else {
			r.B2JoinCheck = fmt.Sprintf("DIFFERENT rows: the projector left %d read rows, %v showing a parent (per join); B2 with join statements %d, %v", rows, joined, b2j.ReadRows, b2j.JoinedRows)
			logf("warning: %s: %s", w.Name, r.B2JoinCheck)
		}
	}
	// The aggregate's B2 computed the same group rows: it must have left
	// what the projector left.
	if slices.Contains(src.b2, "-aggregate") {
		if r.B2Check, err = e.aggregateCheck(ctx, cfg, proj, b2); err != nil {
			return r, err
		}
	}
	if src.b2Check != nil {
		if r.B2Check, err = src.b2Check(ctx, proj, b2); err != nil {
			return r, err
		}
	}
	// Nested children: the arrays must count every child whose parent is
	// there, as the source joins them.
	if d := cfg.Projections[proj.Name]; len(d.Children) > 0 {
		if r.ChildrenCheck, err = e.childrenCheck(ctx, proj, d); err != nil {
			return r, err
		}
	}
	if err := e.workloadLatencyStep(ctx, w, src, &r); err != nil {
		return r, err
	}
	r.TailerVsLimit = r.Tailer.PerS / min(r.B0.PerS, r.B1.PerS)
	r.ProjectorVsB2 = r.Projector.PerS / r.B2.PerS
	if r.B2Join != nil {
		r.ProjectorVsB2Join = r.Projector.PerS / r.B2Join.PerS
	}
	return r, nil
}

// primeTailer runs the tailer once until it checkpoints at the end of the
// binlog, then stops it.
// runTransactional is runWorkload's rest for a transactional variant:
// the tailer and projector drains, the children check and the latency
// step, no limits (its base measured them on the same stream).
func (e *env) runTransactional(ctx context.Context, w workload, r workloadResult, src *source, counts map[string]int, end testbed.BinlogPosition) (workloadResult, error) {
	events := 0
	for _, n := range counts {
		events += n
	}
	w.Events, r.Workload = events, w
	var err error
	if r.Tailer, err = e.tailerDrain(ctx, src.cfgPath, src.cfg.Kafka.TopicPrefix, src.proj.Topic, end, w); err != nil {
		return r, err
	}
	if err := e.createReadTable(ctx, src.proj); err != nil {
		return r, err
	}
	e.settle(ctx, w.Name+": the projector drain")
	if r.Projector, r.ProjectorRows, err = e.projectorDrain(ctx, src.cfgPath, src.proj, w.Events, true); err != nil {
		return r, err
	}
	if d := src.cfg.Projections[src.proj.Name]; len(d.Children) > 0 {
		if r.ChildrenCheck, err = e.childrenCheck(ctx, src.proj, d); err != nil {
			return r, err
		}
	}
	return r, e.workloadLatencyStep(ctx, w, src, &r)
}

// workloadLatencyStep runs the workload's own latency step when it has one.
func (e *env) workloadLatencyStep(ctx context.Context, w workload, src *source, r *workloadResult) error {
	if !w.Live || e.latency == nil || src.live == nil {
		return nil
	}
	var err error
	if r.Latency, err = e.runWorkloadLatency(ctx, w, src, *e.latency); err != nil {
		return fmt.Errorf("latency step: %w", err)
	}
	return nil
}

func (e *env) primeTailer(ctx context.Context, cfgPath, prefix string) error {
	p, err := startReadside(e.bin, cfgPath, "tailer", cfgPath+".log", freeAddr())
	if err != nil {
		return err
	}
	defer p.end()
	cl, err := checkpointClient(e.bed, prefix)
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = waitCheckpoint(ctx, cl, e.bed, nil, time.Minute)
	return err
}

func checkpointClient(bed *testbed.Bed, prefix string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(bed.Kafka.Brokers()...), kgo.ConsumeTopics(event.CheckpointTopic(prefix)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(50*time.Millisecond))
}

// endOffsets sums a topic's high watermarks (transactional records count
// as soon as they are written).
func (e *env) endOffsets(ctx context.Context, topic string) (map[int32]int64, int64) {
	lo, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, 0
	}
	m := map[int32]int64{}
	var sum int64
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			m[o.Partition] = o.Offset
			sum += o.Offset
		}
	})
	return m, sum
}

// tailerDrain starts the tailer on the backlog and times it from its first
// record in the topic (start-up, broker connection and fencing excluded)
// to the checkpoint that covers the backlog's end.
func (e *env) tailerDrain(ctx context.Context, cfgPath, prefix, topic string, end testbed.BinlogPosition, w workload) (rate, error) {
	var r rate
	r.Load1 = loadavg()
	endPos, err := endPosition(end)
	if err != nil {
		return r, err
	}
	cl, err := checkpointClient(e.bed, prefix)
	if err != nil {
		return r, err
	}
	defer cl.Close()
	var cpu func() float64
	var stop func() float64
	commitSecs := func() float64 { return 0 }
	if e.profile != "" {
		// In-process, so runtime/pprof sees the tailer's hot path.
		cfg, _, err := compile(cfgPath)
		if err != nil {
			return r, err
		}
		tl, err := cdc.New(cdc.Config{Source: cfg.Source, Kafka: cfg.Kafka, Cuts: cfg.TransactionalSinks()}, cfg.Kafka.Brokers, e.log, nil)
		if err != nil {
			return r, err
		}
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		stopProfile := func() {}
		go func() { done <- tl.Run(tctx) }()
		cpu = benchio.SelfCPU
		var once sync.Once
		stop = func() float64 {
			once.Do(func() {
				stopProfile()
				cancel()
				<-done
			})
			return 0
		}
		defer stop()
		// The profile covers the drain only.
		for {
			if _, sum := e.endOffsets(ctx, topic); sum > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		stopProfile = startCPUProfile(e.profile + "." + w.Name)
	} else {
		p, err := startReadside(e.bin, cfgPath, "tailer", cfgPath+".log", freeAddr())
		if err != nil {
			return r, err
		}
		cpu = p.cpuSeconds
		stop = p.end
		commitSecs = func() float64 { return p.metric("readside_produce_commit_seconds_sum") }
		defer func() {
			if stop != nil {
				stop()
			}
		}()
	}
	var t0 time.Time
	var h0 int64
	var cpu0, commit0 float64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the tailer did not drain %d events in 10 minutes", w.Events)
		}
		if t0.IsZero() {
			if _, sum := e.endOffsets(ctx, topic); sum > 0 {
				t0, h0, cpu0, commit0 = time.Now(), sum, cpu(), commitSecs()
			}
		}
		if found := pollCheckpoint(ctx, cl, 50*time.Millisecond); found != nil && !t0.IsZero() {
			if ok, err := found.Contains(endPos); err == nil && ok {
				break
			}
		}
	}
	t1, cpu1, commit1 := time.Now(), cpu(), commitSecs()
	_, hEnd := e.endOffsets(ctx, topic)
	r.PeakRSSMiB = stop()
	stop = nil
	share := 1 - float64(h0)/float64(max(hEnd, 1))
	events := float64(w.Events) * share
	r.drained(events, t1.Sub(t0), cpu1-cpu0)
	r.CommitShare = (commit1 - commit0) / r.Seconds
	return r, nil
}

func pollCheckpoint(ctx context.Context, cl *kgo.Client, wait time.Duration) *cdc.Position {
	pctx, cancel := context.WithTimeout(ctx, wait)
	fetches := cl.PollFetches(pctx)
	cancel()
	var found *cdc.Position
	fetches.EachRecord(func(r *kgo.Record) {
		var rec struct {
			Checkpoint struct {
				Position cdc.Position `json:"position"`
			} `json:"checkpoint"`
		}
		if json.Unmarshal(r.Value, &rec) == nil {
			p := rec.Checkpoint.Position
			found = &p
		}
	})
	return found
}

// endPosition is the checkpoint position that covers the bed's binlog up
// to end. Contains parses both GTID sets, so comparing the position with
// itself checks it before a drain waits for it.
func endPosition(end testbed.BinlogPosition) (cdc.Position, error) {
	p := cdc.Position{Flavor: "mariadb", GTID: end.GTID}
	if _, err := p.Contains(p); err != nil || p.GTID == "" {
		return p, fmt.Errorf("the test bed's position %+v has no usable GTID set: %v", end, err)
	}
	return p, nil
}

// waitCheckpoint waits for a checkpoint (containing want, if given). With
// no want it writes a ping transaction so an idle tailer has one to commit.
func waitCheckpoint(ctx context.Context, cl *kgo.Client, bed *testbed.Bed, want *cdc.Position, limit time.Duration) (*cdc.Position, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if want == nil {
			_ = bed.MySQL.Exec(ctx, "CREATE DATABASE IF NOT EXISTS rs_ping", "CREATE TABLE IF NOT EXISTS rs_ping.p (id INT PRIMARY KEY)", "REPLACE INTO rs_ping.p VALUES (1)")
		}
		if found := pollCheckpoint(ctx, cl, 500*time.Millisecond); found != nil {
			if want == nil {
				return found, nil
			}
			if ok, err := found.Contains(*want); err == nil && ok {
				return found, nil
			}
		}
	}
	return nil, fmt.Errorf("no checkpoint reached %v in %v", want, limit)
}

// readTopic reads n committed data records of a topic.
func (e *env) readTopic(ctx context.Context, topic string, n int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bed.Kafka.Brokers()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	deadline := time.Now().Add(5 * time.Minute)
	for len(recs) < n {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d records in %s after 5 minutes", len(recs), n, topic)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Value != nil {
				recs = append(recs, r)
			}
		})
	}
	return recs, nil
}

// projectorDrain starts a projector on the filled topic and times it from
// its first committed batch to the last record applied. The rate counts
// source events; appliedRows is read-table writes per second after
// coalescing (readside_projection_applied_rows_total).
//
// A transactional sink's applier counts the records its commits applied
// (readside_sink_commit_records), not read-table writes: appliedRows is
// then records/s.
func (e *env) projectorDrain(ctx context.Context, cfgPath string, proj *projections.Projection, events int, transactional bool) (rate, float64, error) {
	rowsMetric := "readside_projection_applied_rows_total"
	if transactional {
		rowsMetric = "readside_sink_commit_records_sum"
	}
	var r rate
	r.Load1 = loadavg()
	ends, total := e.topicEnds(ctx, proj)
	p, err := startReadside(e.bin, cfgPath, "projector", cfgPath+".proj.log", freeAddr())
	if err != nil {
		return r, 0, err
	}
	defer func() {
		if p != nil {
			p.end()
		}
	}()
	var t0 time.Time
	var s0 int64
	var cpu0, rows0 float64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if time.Now().After(deadline) {
			return r, 0, fmt.Errorf("the projector did not drain %s in 10 minutes (see %s.proj.log)", proj.Topic, cfgPath)
		}
		applied, sum, err := e.appliedAll(ctx, proj)
		if err != nil {
			return r, 0, err
		}
		switch {
		case t0.IsZero() && sum > 0 && transactional:
			// The applier's first commit takes everything up to the newest
			// cut, often the whole backlog: the drain starts when that
			// commit began, and counts every record.
			t0, s0, rows0 = time.Now().Add(-firstCommit(p)), 0, 0
		case t0.IsZero() && sum > 0:
			t0, s0, cpu0, rows0 = time.Now(), sum, p.cpuSeconds(), p.metric(rowsMetric)
		case t0.IsZero() && transactional && cpu0 == 0:
			cpu0 = p.cpuSeconds() // its start-up's CPU, not its first commit's
		}
		if caughtUpAll(applied, ends) {
			// Under a background fan-out the drain ends when the parents
			// are copied too.
			done, err := e.fanOutsDone(ctx, proj)
			if err != nil {
				return r, 0, err
			}
			if done {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t1, cpu1, rows1 := time.Now(), p.cpuSeconds(), p.metric(rowsMetric)
	r.PeakRSSMiB = p.end()
	p = nil
	share := 1 - float64(s0)/float64(max(total, 1))
	ev := float64(events) * share
	r.drained(ev, t1.Sub(t0), cpu1-cpu0)
	return r, (rows1 - rows0) / r.Seconds, nil
}

// firstCommit is how long the applier's first commit took: its offsets
// are in the sink as soon as it commits, its metric a moment later.
func firstCommit(p *proc) time.Duration {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n := p.metric("readside_sink_commit_seconds_count"); n > 0 {
			phase := func(ph string) float64 {
				return p.metric(`readside_sink_commit_phase_seconds_sum{phase="`+ph+`"`) / n
			}
			logf("the applier's first commit: apply %.3f s (waiting for the commit before %.3f s), finish %.3f s (held writes, frontier, COMMIT); its cut %.3f s old when it started",
				phase("apply"), phase("previous"), phase("finish"), p.metric("readside_sink_commit_cut_age_seconds_sum")/n)
			// More than one by now (rare): their mean.
			return time.Duration(p.metric("readside_sink_commit_seconds_sum") / n * float64(time.Second))
		}
	}
	logf("warning: the applier's first commit took an unknown time (no readside_sink_commit_seconds): the drain is timed from its end")
	return 0
}

// appliedOffsets reads the projection's committed next offsets from the sink.
func (e *env) appliedOffsets(ctx context.Context, p *projections.Projection) (map[int32]int64, int64, error) {
	return e.appliedOffsetsOf(ctx, p, p.Topic)
}

// appliedOffsetsOf reads the projection's committed next offsets of one of
// its topics (a join consumes its parents' topics too).
func (e *env) appliedOffsetsOf(ctx context.Context, p *projections.Projection, topic string) (map[int32]int64, int64, error) {
	rows, err := e.sink.DB().QueryContext(ctx, "SELECT part, next_offset FROM _readside_offsets WHERE projection = ? AND topic = ?", p.Name, topic)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	m := map[int32]int64{}
	var sum int64
	for rows.Next() {
		var part int32
		var next int64
		if err := rows.Scan(&part, &next); err != nil {
			return nil, 0, err
		}
		m[part] = next
		sum += next
	}
	return m, sum, rows.Err()
}

// caughtUp: every partition applied up to its end offset, less the commit
// marker that ends the last Kafka transaction.
func caughtUp(applied, ends map[int32]int64) bool {
	for part, end := range ends {
		if end > 0 && applied[part] < end-1 {
			return false
		}
	}
	return true
}
