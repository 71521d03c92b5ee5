// Package postgres is a durable store.Store on PostgreSQL (SPEC §13), for hosts that must resume tasks after a
// restart or run several replicas over one database.
//
// It is built on database/sql with the pgx v5 driver (github.com/jackc/pgx/v5/stdlib). Open creates or migrates
// its tables; several processes may open the same database at once. The Store implements store.SwapStore,
// store.LeaseStore and store.ExpiringStore with the memory store's semantics, store.ClaimStore (delivery ids are
// claimed in one round trip), store.BatchStore (several keys in one statement), store.ScanStore,
// store.RouteStore (schema version 2: one table, tool_routes, looked up for any number of routes in one round
// trip) and store.TaskExpiryStore (schema version 3: one table,
// tool_task_expiry, read by expiry time). A library older than the schema refuses to open it, so
// going back to a version from before a migration is refused, not misread:
//
//   - keys and values are stored as bytea, so any Go string is a key and List sorts keys bytewise, exactly like
//     sort.Strings; a prefix is matched by a range scan over the primary key, never by LIKE, and every key and
//     value travels as a query parameter;
//   - lease, claim and expiry times are taken from the database's clock (now()), not the host's, so that replicas whose
//     clocks differ agree on who holds a lease and which keys have expired;
//   - keys written with PutTTL are invisible to Get, List and CompareAndSwap once expired, and a background
//     goroutine (ended by Close) deletes them, with expired leases, every cleanup interval.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver, for OpenDB's callers
)

// MaxKeyLen is the longest key the Store accepts, in bytes: PostgreSQL's B-tree indexes refuse entries much
// longer than this.
const MaxKeyLen = 2048

// Store is a store.Store on PostgreSQL. It is safe for concurrent use, also by several processes sharing the
// database. Get returns store.ErrNotFound for an absent or expired key; other errors come from the database,
// wrapped.
type Store struct {
	db      *sql.DB
	ownsDB  bool
	q       queries
	acquire time.Duration // how long an operation waits for a connection; 0: as long as its ctx allows

	calls *group[*storeCall] // Claim's, the writes' and Lookup's calls (WithGroupCommit); nil: each runs alone

	stop    context.CancelFunc
	done    chan struct{}
	closeMu sync.Mutex
	closed  bool
}

type config struct {
	schema   string
	cleanup  time.Duration
	maxConns int
	acquire  time.Duration // WithAcquireTimeout
	lanes    int           // WithGroupCommit
}

// Option configures Open and OpenDB.
type Option func(*config) error

// WithSchema puts the Store's tables in the named schema, created if absent, instead of the connection's
// search_path. Stores in different schemas of one database are independent (tests use a schema each).
func WithSchema(name string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("WithSchema: empty schema name")
		}
		c.schema = name
		return nil
	}
}

// WithCleanupInterval sets how often expired keys and leases are deleted (default one minute); 0 turns the
// background cleanup off (call Cleanup yourself). Expired keys are invisible either way.
func WithCleanupInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("WithCleanupInterval: negative interval %v", d)
		}
		c.cleanup = d
		return nil
	}
}

// WithMaxConns bounds the connections Open's pool keeps open (default 16); it does not apply to OpenDB, whose
// pool the caller configures.
func WithMaxConns(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithMaxConns: %d is not positive", n)
		}
		c.maxConns = n
		return nil
	}
}

// Open connects to the PostgreSQL server named by dsn (a URL such as
// postgres://user:password@host:5432/db?sslmode=disable, or key=value pairs), creates or migrates the Store's
// tables, and starts the cleanup of expired keys. ctx bounds connecting and migrating only. The returned Store owns
// its connection pool: Close closes it. Errors never contain the dsn's password.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	// Parsed here, so that no error quotes the dsn: the driver's own masking misses some libpq spellings of the
	// password.
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("postgres store: the DSN cannot be parsed (it is not quoted here: it may hold a password)")
	}
	db := stdlib.OpenDB(*pc)
	db.SetMaxOpenConns(cfg.maxConns)
	db.SetMaxIdleConns(cfg.maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s, err := open(ctx, db, cfg)
	if err != nil {
		db.Close()
		if pc.Password != "" && strings.Contains(err.Error(), pc.Password) {
			err = errors.New(strings.ReplaceAll(err.Error(), pc.Password, "[redacted]"))
		}
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// OpenDB is Open on a pool the caller already has (opened with the "pgx" driver or another PostgreSQL driver);
// Close then leaves db open.
func OpenDB(ctx context.Context, db *sql.DB, opts ...Option) (*Store, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	return open(ctx, db, cfg)
}

func configure(opts []Option) (config, error) {
	cfg := config{cleanup: time.Minute, maxConns: 16, lanes: defaultLanes}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return config{}, fmt.Errorf("postgres store: %w", err)
		}
	}
	return cfg, nil
}

func open(ctx context.Context, db *sql.DB, cfg config) (*Store, error) {
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("postgres store: connect: %w", err)
	}
	prefix := ""
	if cfg.schema != "" {
		prefix = pgx.Identifier{cfg.schema}.Sanitize() + "."
	}
	if err := migrate(ctx, db, cfg.schema, prefix); err != nil {
		return nil, fmt.Errorf("postgres store: migrate: %w", err)
	}
	s := &Store{db: db, q: newQueries(prefix), acquire: cfg.acquire, done: make(chan struct{})}
	s.grouped(cfg.lanes)
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.cleanupLoop(bg, cfg.cleanup)
	return s, nil
}

// Close stops the background cleanup and, when Open made the pool, closes it. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stop()
	<-s.done
	if s.ownsDB {
		if err := s.db.Close(); err != nil {
			return fmt.Errorf("postgres store: close: %w", err)
		}
	}
	return nil
}

func (s *Store) cleanupLoop(ctx context.Context, every time.Duration) {
	defer close(s.done)
	if every == 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed sweep is retried on the next tick; expired keys are invisible meanwhile.
			_, _ = s.Cleanup(ctx)
		}
	}
}

// Cleanup deletes expired keys and leases now and returns how many keys it deleted. It works in batches, so it
// holds no long lock; several replicas may run it at once.
func (s *Store) Cleanup(ctx context.Context) (int64, error) {
	var total int64
	for {
		res, err := s.exec(ctx, s.q.sweepKeys, cleanupBatch)
		if err != nil {
			return total, fmt.Errorf("postgres store: cleanup: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("postgres store: cleanup: %w", err)
		}
		total += n
		if n < cleanupBatch {
			break
		}
	}
	if _, err := s.exec(ctx, s.q.sweepLeases); err != nil {
		return total, fmt.Errorf("postgres store: cleanup leases: %w", err)
	}
	return total, nil
}

const cleanupBatch = 1000

var (
	_ store.SwapStore     = (*Store)(nil)
	_ store.ClaimStore    = (*Store)(nil)
	_ store.LeaseStore    = (*Store)(nil)
	_ store.ExpiringStore = (*Store)(nil)
	_ store.BatchStore    = (*Store)(nil)
)
