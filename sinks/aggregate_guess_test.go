package sinks

import (
	"context"
	"fmt"
	"strings"
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

// TestContentionSaysWhy: the retried duplicate key of a wrong guess says
// the key was already stored (in a consistent commit there is no other
// transaction to blame); a duplicate key another transaction wrote says
// so.
func TestContentionSaysWhy(t *testing.T) {
	dup := &driver.MySQLError{Number: 1062, Message: "Duplicate entry '{\"id\":7}' for key 'PRIMARY'"}
	if got := (contention{wrongGuess{dup}}).Error(); !strings.Contains(got, "an inserted row's key was already stored") || strings.Contains(got, "another transaction") {
		t.Errorf("a wrong guess: %s", got)
	}
	if got := (contention{dup}).Error(); !strings.Contains(got, "written by another transaction") {
		t.Errorf("a concurrent insert: %s", got)
	}
}
