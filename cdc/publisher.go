package cdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// publisher is the tailer's Kafka side: one transactional producer whose
// transactions carry change events and, last, the checkpoint that covers
// them. Produce is asynchronous; commit flushes, checks every record's
// outcome, appends the checkpoint and commits the Kafka transaction. A
// failed or ambiguous commit is never retried blindly: the tailer reloads
// the checkpoint from Kafka and resumes from what is really there.
//
// A commit runs in the background (commitAsync) so the binlog keeps being
// read and encoded meanwhile: the records produced during it are held
// (bounded) and open the next transaction once it is done (a backlog drain
// that waited for each commit would spend a third of its time stalled).
type publisher struct {
	cl              *kgo.Client
	adm             *kadm.Client
	opts            []kgo.Opt // cl's, for renew
	brokers         []string
	txnID           string
	checkpointTopic string
	historyTopic    string // set when the tailer keeps a schema history
	txnTopic        string // set under provide.transaction.metadata

	mu       sync.Mutex
	firstErr error // first failed produce in the open transaction

	inTxn    bool
	records  int       // records of the next commit: sent in the open transaction, or held
	txnStart time.Time // when the first of them was produced

	// separateCheckpoint commits the checkpoint in a transaction of its
	// own after the events' (the embedded broker; see commitAsync).
	separateCheckpoint bool

	// published keeps Checkpoint.Published when a sink is transactional
	// (nil otherwise: commits then take no extra flush round trip).
	published *publishedOffsets

	inflight  *pendingCommit // the commit running in the background, if any
	held      []*kgo.Record  // produced while it runs, in order
	heldBytes int
}

// pendingCommit is a commit running in the background.
type pendingCommit struct {
	done chan struct{} // closed when the commit is over, err set before
	err  error
}

func (c *pendingCommit) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Records held while a commit runs are bounded like the producer's own
// buffer; past this, producing waits for the commit.
const (
	maxHeldRecords = 50_000
	maxHeldBytes   = 32 << 20
)

// pinnedPartitioner hashes keyed records like Kafka's default partitioner
// (murmur2, so any Kafka client agrees where a key lives) and sends keyless
// records to the partition the tailer set, which is how a truncate event
// reaches every partition.
type pinnedPartitioner struct{ keyed kgo.Partitioner }

func (p pinnedPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return pinnedTopicPartitioner{p.keyed.ForTopic(topic)}
}

type pinnedTopicPartitioner struct{ keyed kgo.TopicPartitioner }

func (pinnedTopicPartitioner) RequiresConsistency(*kgo.Record) bool { return true }
func (p pinnedTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key == nil {
		return int(r.Partition) % n
	}
	return p.keyed.Partition(r, n)
}

// producerBuffer is how many bytes of records the tailer keeps produced
// but not yet acknowledged. Their bytes, and the slab chunks tracked with
// them (maxTakenChunks), are most of what a huge source transaction keeps
// alive, and the collector lets the heap grow to twice what is alive; but
// a smaller buffer is fewer bytes in flight per produce round trip:
// docs/design/exactly-once.md has both, measured.
const producerBuffer = 32 << 20

func newPublisher(brokers []string, txnID, checkpointTopic string, maxMessageBytes int, compression kgo.Opt, logger kgo.Logger) (*publisher, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(5 * time.Minute),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(pinnedPartitioner{kgo.StickyKeyPartitioner(nil)}),
		kgo.ProducerBatchMaxBytes(int32(max(maxMessageBytes+1024, 1<<20))),
		// Back-pressure on the binlog reader. franz-go fails a record
		// larger than the buffer outright (MESSAGE_TOO_LARGE, client
		// side), so the buffer must hold at least one event of
		// kafka.max_message_bytes, with room for the next.
		kgo.MaxBufferedBytes(max(producerBuffer, 2*maxMessageBytes+1<<20)),
		kgo.MaxBufferedRecords(50_000),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RecordDeliveryTimeout(0), // never give up on a record: its outcome decides the commit
		compression,
		kgo.WithLogger(logger),
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &publisher{cl: cl, adm: kadm.NewClient(cl), opts: opts, brokers: brokers, txnID: txnID, checkpointTopic: checkpointTopic}, nil
}

// renew replaces the client with a new one of the same options (see
// loadCheckpoint).
func (p *publisher) renew() error {
	cl, err := kgo.NewClient(p.opts...)
	if err != nil {
		return err
	}
	p.cl.Close()
	p.cl, p.adm = cl, kadm.NewClient(cl)
	return nil
}

func (p *publisher) Close() { p.cl.Close() }

// separateCheckpoints commits every checkpoint in a transaction of its own
// after the events' (the embedded broker; see commitAsync).
func (p *publisher) separateCheckpoints() { p.separateCheckpoint = true }

// keepTransactionTopic makes topic provide.transaction.metadata's:
// ensureTopics creates it.
func (p *publisher) keepTransactionTopic(topic string) { p.txnTopic = topic }

// keepSchemaHistory makes topic the schema history's: ensureTopics creates
// it, loadSchemaHistory and produceSchemaHistory use it.
func (p *publisher) keepSchemaHistory(topic string) { p.historyTopic = topic }

// batch is the publisher's side of the next commit: how many records it
// holds (sent in the open transaction, or held while a commit runs) and
// when the first of them was produced.
func (p *publisher) batch() (records int, since time.Time) { return p.records, p.txnStart }

// committing reports a commit running in the background, or over with its
// outcome not yet taken up by settle.
func (p *publisher) committing() bool { return p.inflight != nil }

// commitRunning reports a commit still running in the background.
func (p *publisher) commitRunning() bool { return p.inflight != nil && !p.inflight.finished() }

// commitOver reports a background commit that is over, its outcome not yet
// taken up by settle.
func (p *publisher) commitOver() bool { return p.inflight != nil && p.inflight.finished() }

// commitDone is closed when the background commit is over; nil (never
// ready in a select) when none runs.
func (p *publisher) commitDone() <-chan struct{} {
	if p.inflight == nil {
		return nil
	}
	return p.inflight.done
}

// ensureTopics creates the table topics and the checkpoint topic when they
// do not exist and returns every topic's partition count. Topics are
// created explicitly (never auto-created) so their settings are right.
func (p *publisher) ensureTopics(ctx context.Context, topics []string, partitions int32, rf int16, maxMessageBytes int) (map[string]int, error) {
	maxBytes := strconv.Itoa(maxMessageBytes + 1024)
	tableCfg := map[string]*string{"max.message.bytes": &maxBytes}
	compact := "compact"
	segment := strconv.Itoa(int(time.Hour / time.Millisecond))
	cpCfg := map[string]*string{"cleanup.policy": &compact, "segment.ms": &segment, "max.message.bytes": &maxBytes}
	create := func(cfg map[string]*string, parts int32, names ...string) error {
		resp, err := p.adm.CreateTopics(ctx, parts, rf, cfg, names...)
		if err != nil {
			return fmt.Errorf("creating topics %v: %w", names, err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("creating topic %s: %w", r.Topic, r.Err)
			}
		}
		return nil
	}
	if err := create(tableCfg, partitions, topics...); err != nil {
		return nil, err
	}
	internal := []string{p.checkpointTopic}
	if p.historyTopic != "" {
		internal = append(internal, p.historyTopic)
	}
	if err := create(cpCfg, 1, internal...); err != nil {
		return nil, err
	}
	if p.txnTopic != "" {
		// One partition: the BEGIN and END records keep the source's
		// commit order (an existing topic is used as it is).
		if err := create(tableCfg, 1, p.txnTopic); err != nil {
			return nil, err
		}
		internal = append(internal, p.txnTopic)
	}
	// Topic creation is asynchronous on the broker; wait until every topic
	// has leaders.
	deadline := time.Now().Add(60 * time.Second)
	for {
		md, err := p.adm.Metadata(ctx, append(slices.Clone(topics), internal...)...)
		if err == nil {
			counts := map[string]int{}
			ready := true
			for _, td := range md.Topics {
				if td.Err != nil || len(td.Partitions) == 0 {
					ready = false
					break
				}
				for _, pd := range td.Partitions {
					if pd.Leader < 0 {
						ready = false
					}
				}
				counts[td.Topic] = len(td.Partitions)
			}
			if ready && len(counts) == len(topics)+len(internal) {
				return counts, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topics not ready after 60s: %v", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// loadCheckpoint fences any older producer with the same transactional id
// (aborting its open transaction), then reads the last committed checkpoint
// of this tailer from the checkpoint topic.
func (p *publisher) loadCheckpoint(ctx context.Context) (Checkpoint, bool, error) {
	_, _, err := p.cl.ProducerID(ctx)
	if fenced(err) && !p.commitRunning() {
		// A client that had a producer id initializes again with it and its
		// epoch (KIP-360), and a transaction coordinator that aborted the
		// open transaction while a broker restarted has bumped that epoch
		// since: the client is fenced by its own past session, which an
		// init never is by another tailer (an init fences; another tailer
		// shows as a fenced produce or commit, which stays fatal). A new
		// client starts without an epoch and fences every older session,
		// our own included. TestPublisherInitFencedRenews.
		if err = p.renew(); err == nil {
			_, _, err = p.cl.ProducerID(ctx)
		}
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("initializing transactional producer %s: %w", p.txnID, err)
	}
	return readCheckpoint(ctx, p.adm, p.brokers, p.checkpointTopic, p.txnID)
}

// produce sends r inside the open transaction, opening one if needed, or
// holds it for the next one while a commit runs. It blocks when the
// producer's buffer (or the held records) are full, which is the
// back-pressure that keeps a huge source transaction from being held in
// memory.
func (p *publisher) produce(ctx context.Context, r *kgo.Record) error {
	if p.records == 0 {
		p.txnStart = time.Now()
	}
	p.records++
	if p.inflight != nil {
		if !p.inflight.finished() && len(p.held) < maxHeldRecords && p.heldBytes < maxHeldBytes {
			p.held = append(p.held, r)
			p.heldBytes += len(r.Key) + len(r.Value)
			return nil
		}
		p.held = append(p.held, r)
		return p.settle(ctx)
	}
	return p.send(ctx, r)
}

// send produces r in the open transaction, opening one if needed.
func (p *publisher) send(ctx context.Context, r *kgo.Record) error {
	if !p.inTxn {
		if err := p.cl.BeginTransaction(); err != nil {
			return fmt.Errorf("beginning Kafka transaction: %w", err)
		}
		p.inTxn = true
	}
	p.cl.Produce(ctx, r, p.produced)
	return nil
}

// produced is every record's produce callback: the first failure fails
// the transaction; an acknowledged table record moves the cut.
func (p *publisher) produced(r *kgo.Record, err error) {
	if err != nil {
		p.mu.Lock()
		if p.firstErr == nil {
			p.firstErr = fmt.Errorf("producing to %s: %w", r.Topic, err)
		}
		p.mu.Unlock()
		return
	}
	if p.published != nil {
		p.published.acked(r)
	}
}

// settle waits for the commit running in the background, then sends the
// records held meanwhile in a new transaction. After a failed commit they
// are dropped: the tailer resumes from the checkpoint in Kafka.
func (p *publisher) settle(ctx context.Context) error {
	c := p.inflight
	if c == nil {
		return nil
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.inflight = nil
	held := p.held
	p.held, p.heldBytes = nil, 0
	if c.err != nil {
		return c.err
	}
	for _, r := range held {
		if err := p.send(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// commit makes everything produced since the transaction began visible,
// together with cp, and returns when it is committed.
func (p *publisher) commit(ctx context.Context, cp Checkpoint) error {
	if err := p.commitAsync(ctx, cp, nil); err != nil {
		return err
	}
	return p.settle(ctx)
}

// commitAsync ends the open transaction with cp and commits it in the
// background; after runs there once it is committed, with how long the
// commit took (the wait for a previous one excluded). A commit still
// running from before is waited for first: at most one runs at a time.
// Its outcome reaches the caller through the next produce, commit or
// settle.
func (p *publisher) commitAsync(ctx context.Context, cp Checkpoint, after func(took time.Duration)) error {
	if err := p.settle(ctx); err != nil {
		return err
	}
	commit, err := p.commitSteps(ctx, cp)
	if err != nil {
		return err
	}
	p.inTxn, p.records = false, 0
	begun := time.Now()
	c := &pendingCommit{done: make(chan struct{})}
	p.inflight = c
	// A commit of complete source transactions is let finish when the
	// tailer is asked to stop, within a grace period.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(20*time.Second, cancel) })
	go func() {
		defer close(c.done) // last: err is set (defers run last-in, first-out)
		defer cancel()
		defer stop()
		c.err = commit(cctx)
		if c.err == nil && after != nil {
			after(time.Since(begun))
		}
	}()
	return nil
}

// commitSteps returns what the background commit of the open transaction
// with cp runs.
//
// The embedded broker (kfake) writes a commit's markers partition by
// partition with no transaction log to finish them after a crash: a kill
// -9 in the middle leaves some partitions committed and the rest aborted.
// With the checkpoint in the events' transaction, it could survive while
// events it covers did not — lost for good. So there the events commit
// first and the checkpoint after, alone (one partition: all or nothing); a
// crash in between publishes the events again from the previous
// checkpoint, with the same versions, which every sink ignores as stale.
// With Kafka the commit is atomic and the checkpoint rides in the events'
// transaction (exactly once).
func (p *publisher) commitSteps(ctx context.Context, cp Checkpoint) (func(context.Context) error, error) {
	events := p.inTxn
	alone := p.separateCheckpoint && events
	if p.published != nil {
		return func(ctx context.Context) error { return p.commitWithCut(ctx, cp, events, alone) }, nil
	}
	value, err := encodeCheckpoint(cp)
	if err != nil {
		return nil, err
	}
	checkpoint := &kgo.Record{Topic: p.checkpointTopic, Key: []byte(p.txnID), Value: value}
	if !alone {
		if err := p.send(ctx, checkpoint); err != nil {
			return nil, err
		}
		return p.finish, nil
	}
	return func(ctx context.Context) error {
		if err := p.finish(ctx); err != nil {
			return err
		}
		return p.commitAlone(ctx, checkpoint)
	}, nil
}

// commitWithCut is the background commit when checkpoints carry
// Published: the cut is only known once every record of the transaction
// is acknowledged, so the events are flushed (and, alone, committed)
// first, then the checkpoint is produced with the cut and committed. The
// cut becomes the next commit's base only once its checkpoint committed.
func (p *publisher) commitWithCut(ctx context.Context, cp Checkpoint, events, alone bool) error {
	if events {
		step := p.flushChecked
		if alone {
			step = p.finish
		}
		if err := step(ctx); err != nil {
			return err
		}
	}
	cp.Published = p.published.next()
	value, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	checkpoint := &kgo.Record{Topic: p.checkpointTopic, Key: []byte(p.txnID), Value: value}
	if events && !alone {
		p.cl.Produce(ctx, checkpoint, p.produced)
		err = p.finish(ctx)
	} else {
		err = p.commitAlone(ctx, checkpoint)
	}
	if err == nil {
		p.published.committed(cp.Published)
	}
	return err
}

// finish flushes the ended transaction, checks every record's outcome and
// commits it (or aborts it when a record failed).
func (p *publisher) finish(ctx context.Context) error {
	if err := p.flushChecked(ctx); err != nil {
		return err
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("committing Kafka transaction (outcome unknown; resuming from the stored checkpoint): %w", err)
	}
	return nil
}

// flushChecked flushes the open transaction and checks every record's
// outcome, aborting it when one failed.
func (p *publisher) flushChecked(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return p.endAbort(ctx, fmt.Errorf("flushing: %w", err))
	}
	p.mu.Lock()
	perr := p.firstErr
	p.mu.Unlock()
	if perr != nil {
		return p.endAbort(ctx, perr)
	}
	return nil
}

// commitAlone commits r in a transaction of its own (from the background
// commit, which owns the client until it is done).
func (p *publisher) commitAlone(ctx context.Context, r *kgo.Record) error {
	if err := p.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("beginning Kafka transaction: %w", err)
	}
	p.cl.Produce(ctx, r, p.produced)
	return p.finish(ctx)
}

// abort waits for a commit running in the background, drops held records,
// rolls back the open transaction and returns cause (joined with the
// background commit's error, if it failed).
func (p *publisher) abort(ctx context.Context, cause error) error {
	var errs []error
	if cause != nil {
		errs = append(errs, cause)
	}
	if c := p.inflight; c != nil {
		select {
		case <-c.done:
			if c.err != nil {
				errs = append(errs, c.err)
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("waiting for a Kafka commit: %w", ctx.Err()))
		}
		p.inflight = nil
	}
	p.held, p.heldBytes, p.records = nil, 0, 0
	// Ended even when no transaction of ours is open: after a commit that
	// failed or whose outcome is unknown (the broker went away during
	// EndTxn), franz-go keeps the transaction open until it is ended with
	// an abort, which also fences whatever the broker may still hold open
	// (an epoch bump). Until then every BeginTransaction fails, and the
	// tailer would retry for ever without publishing again. Aborting when
	// the client is in no transaction does nothing.
	p.inTxn = false
	if err := p.endAbort(ctx, nil); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// endAbort drops the buffered records and aborts the Kafka transaction.
func (p *publisher) endAbort(ctx context.Context, cause error) error {
	p.mu.Lock()
	p.firstErr = nil
	p.mu.Unlock()
	var errs []error
	if cause != nil {
		errs = append(errs, cause)
	}
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		errs = append(errs, fmt.Errorf("dropping buffered records: %w", err))
	}
	if p.published != nil {
		p.published.dropPending()
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		errs = append(errs, fmt.Errorf("aborting Kafka transaction: %w", err))
	}
	return errors.Join(errs...)
}

// fenced reports whether err means another producer took over the
// transactional id: a second tailer is running.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}
