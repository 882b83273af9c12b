// The dead-letter topic: created (or raised) so that it holds any record
// readside publishes, kafka.max_message_bytes plus the headers.

package projector

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/internal/kafkalog"
)

// dlqHeadroom is what a dead-lettered record may carry beyond the rejected
// one (kafka.max_message_bytes at most): the headers saying where it came
// from and why, and the batch framing.
const dlqHeadroom = 64 << 10

func (pr *Projector) openDLQ(ctx context.Context) error {
	maxBytes := pr.o.MaxMessageBytes + dlqHeadroom
	cl, err := kgo.NewClient(kgo.SeedBrokers(pr.o.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(int32(max(maxBytes, 1<<20))),
		kgo.MaxBufferedBytes(max(32<<20, 2*maxBytes)),
		kgo.WithLogger(kafkalog.New(pr.log)))
	if err != nil {
		return err
	}
	// Created explicitly: brokers may not auto-create, and the embedded
	// one keeps only explicitly created topics across a crash. Its
	// max.message.bytes lets a rejected record of any size readside
	// publishes in; an existing topic (an older readside's, or one made
	// before kafka.max_message_bytes was raised) is raised to it.
	topic := pr.p.DLQTopic
	limit := strconv.Itoa(maxBytes)
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"max.message.bytes": &limit}, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		err = raiseMaxMessageBytes(ctx, adm, topic, maxBytes)
	}
	if err != nil {
		cl.Close()
		return fmt.Errorf("creating the dead-letter topic %s: %w", topic, err)
	}
	pr.dlq = cl
	return nil
}

// raiseMaxMessageBytes sets an existing topic's max.message.bytes to at
// least limit (a larger one set by the operator stays).
func raiseMaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string, limit int) error {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return fmt.Errorf("reading its configuration: %w", err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return fmt.Errorf("reading its configuration: %w", err)
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			if n, err := strconv.Atoi(*c.Value); err == nil && n >= limit {
				return nil
			}
		}
	}
	v := strconv.Itoa(limit)
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = alt.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return fmt.Errorf("raising its max.message.bytes to %d (kafka.max_message_bytes plus headers; or raise it by hand): %w", limit, err)
	}
	return nil
}
