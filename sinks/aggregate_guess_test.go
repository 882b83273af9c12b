package sinks

import (
	"context"
	"fmt"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/projections"
)

// TestRetryAfterWrongGuessReadsEveryKey: the attempt after a batch's own
// wrong guess reads every key, even when another batch of the projection
// (row mode runs one per partition at once) cleared the mark meanwhile;
// guessing again could fail again, without end.
func TestRetryAfterWrongGuessReadsEveryKey(t *testing.T) {
	s := &MySQL{}
	p := &projections.Projection{Name: "stats"}
	dup := &driver.MySQLError{Number: 1062, Message: "Duplicate entry 'b' for key 'PRIMARY'"}
	var attempts []bool
	err := s.retried(t.Context(), p, &projections.Batch{}, func(ctx context.Context, p *projections.Projection, _ *projections.Batch) error {
		readAll := s.readAll(ctx, p).readAll
		attempts = append(attempts, readAll)
		if readAll || len(attempts) == 4 {
			return nil
		}
		// The guess was wrong (its settle marks the projection), and
		// another batch's clean commit clears the mark before the retry.
		s.guessFor(p).settle(guessOutcome{guessed: true}, dup)
		s.guessFor(p).settle(guessOutcome{readAll: true}, nil)
		return contention{wrongGuess{dup}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(attempts), "[false true]"; got != want {
		t.Errorf("attempts read every key: %s, want %s", got, want)
	}
}
