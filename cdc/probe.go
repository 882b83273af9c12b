package cdc

import (
	"context"

	"github.com/readside/readside/config"
)

// Probe connects to the source as the tailer does (TLS included) and
// reads its identity, so start-up can wait for a source that is not up
// yet before anything depends on it.
func Probe(ctx context.Context, cfg config.Source) error {
	src, err := openSource(ctx, cfg.DSN.Reveal(), cfg.Flavor, cfg.TLS)
	if err != nil {
		return err
	}
	return src.Close()
}
