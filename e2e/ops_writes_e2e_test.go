package e2e

// Writers that change an opsPipeline's source table while readside runs.

import (
	"context"
	"time"
)

// messageIDs are the ids of the source's messages rows.
func (p *opsPipeline) messageIDs(ctx context.Context) ([]int, error) {
	rows, err := p.bed.MySQL.DB().QueryContext(ctx, "SELECT id FROM `"+p.src+"`.messages")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// writeUntilDone calls write(0), write(1), … 2 ms apart until ctx ends.
// An error once ctx has ended is the end of the writes, not a failure.
func writeUntilDone(ctx context.Context, write func(i int) error) error {
	for i := 0; ctx.Err() == nil; i++ {
		if err := write(i); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}
