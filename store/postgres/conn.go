package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrPoolExhausted is wrapped by the error of an operation that found no connection of the pool free within the
// bound WithAcquireTimeout sets, or, grouped (WithGroupCommit), no lane free within it.
var ErrPoolExhausted = errors.New("postgres store: no connection free")

// WithAcquireTimeout bounds how long an operation waits for a connection of the pool (default 0: as long as its
// ctx allows). Past it, the operation fails at once with an error wrapping ErrPoolExhausted, and does not queue:
// a Router then answers the webhook 503 with Retry-After (a failed route lookup decides nothing), so that a replica
// whose database is saturated sheds load instead of holding every request until the pool frees up. The bound
// covers opening a connection when the pool has room. It applies to OpenDB's pool too, and to a call grouped by
// WithGroupCommit that waits for its lane: it fails likewise once the statement ahead runs past the bound.
func WithAcquireTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("WithAcquireTimeout: negative timeout %v", d)
		}
		c.acquire = d
		return nil
	}
}

// querier is what the Store's statements run on: the pool, or one connection taken from it.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn is where a statement runs and the function that gives it back: the pool itself when waiting for a
// connection is unbounded, else a connection taken within the bound.
func (s *Store) conn(ctx context.Context) (querier, func(), error) {
	if s.acquire == 0 {
		return s.db, func() {}, nil
	}
	actx, cancel := context.WithTimeout(ctx, s.acquire)
	c, err := s.db.Conn(actx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("%w within %v", ErrPoolExhausted, s.acquire)
		}
		return nil, nil, err
	}
	return c, func() { c.Close() }, nil
}

// exec runs a statement that returns no rows.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q, done, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return q.ExecContext(ctx, query, args...)
}

// queryRow runs a statement that returns one row and scans it into dest (sql.ErrNoRows when there is none).
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	q, done, err := s.conn(ctx)
	if err != nil {
		return err
	}
	defer done()
	return q.QueryRowContext(ctx, query, args...).Scan(dest...)
}

// query runs a statement that returns rows; the caller closes them, then calls done.
func (s *Store) query(ctx context.Context, query string, args ...any) (rows *sql.Rows, done func(), err error) {
	q, done, err := s.conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if rows, err = q.QueryContext(ctx, query, args...); err != nil {
		done()
		return nil, nil, err
	}
	return rows, done, nil
}
