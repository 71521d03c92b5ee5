package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/store"
)

// The tasks' expiries of store.TaskExpiryStore live in tool_task_expiry (schema version 3): a row per task that
// has one, indexed by (at, task), so that a sweep reads the expired rows only. The times are the caller's
// (TaskConfig.ExpiresAt on the Tool's Clock), kept to the microsecond.

// SetTaskExpiry records when task expires, or removes its record for a zero at, in one statement.
func (s *Store) SetTaskExpiry(ctx context.Context, task string, at time.Time) error {
	if err := checkKey(task); err != nil {
		return err
	}
	var err error
	if at.IsZero() {
		_, err = s.exec(ctx, s.q.deleteExpiry, []byte(task))
	} else {
		_, err = s.exec(ctx, s.q.setExpiry, []byte(task), at)
	}
	if err != nil {
		return fmt.Errorf("postgres store: set the expiry of %q: %w", task, err)
	}
	return nil
}

// ExpiredTasks returns a page of the tasks under prefix that expire at or before now, in (At, Task) order.
func (s *Store) ExpiredTasks(ctx context.Context, prefix string, now time.Time, after store.TaskExpiry,
	limit int) ([]store.TaskExpiry, error) {
	if limit <= 0 {
		return nil, errors.New("postgres store: expired tasks: limit must be positive")
	}
	var end []byte // nil: no upper bound
	if e, ok := successor(prefix); ok {
		end = e
	}
	rows, done, err := s.query(ctx, s.q.expired, now, after.At, []byte(after.Task), []byte(prefix), end, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres store: expired tasks: %w", err)
	}
	defer done()
	defer rows.Close()
	var out []store.TaskExpiry
	for rows.Next() {
		var task []byte
		var at time.Time
		if err := rows.Scan(&task, &at); err != nil {
			return nil, fmt.Errorf("postgres store: expired tasks: %w", err)
		}
		out = append(out, store.TaskExpiry{Task: string(task), At: at})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: expired tasks: %w", err)
	}
	return out, nil
}

var _ store.TaskExpiryStore = (*Store)(nil)
