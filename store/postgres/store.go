package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/commonagents-go/tool/store"
)

// queries holds the Store's SQL, built once with the schema prefix. A key is live when it has no expiry or its
// expiry is after the database's now().
type queries struct {
	get, put, putTTL, putBatch, del, listFrom, listRange, casInsert, casUpdate, claim string
	lease, release, sweepKeys, sweepLeases                                            string
	scanFrom, scanRange                                                               string // Scan (scan.go)
	putRoutes, deleteRoutes, deleteTask, bump, lookup                                 string // RouteStore (routes.go)
	setExpiry, deleteExpiry, expired                                                  string // TaskExpiryStore (expiry.go)
	grouped                                                                           string // claims, writes and lookups at once (group_calls.go)

	scanRanges func(n int) string // ScanExcept (scan.go): n ranges
}

func newQueries(prefix string) queries {
	kv, leases, routes := prefix+"tool_kv", prefix+"tool_leases", prefix+"tool_routes"
	expiry := prefix + "tool_task_expiry"
	const live = `(expires_at IS NULL OR expires_at > now())`
	return queries{
		// n [low, high) ranges, $1 to $2n, each a range scan over the primary key.
		scanRanges: func(n int) string {
			var b strings.Builder
			for i := range n {
				if i > 0 {
					b.WriteString(" UNION ALL ")
				}
				fmt.Fprintf(&b, "SELECT key, value FROM %s WHERE key >= $%d AND key < $%d AND %s", kv, 2*i+1, 2*i+2, live)
			}
			b.WriteString(" ORDER BY key")
			return b.String()
		},
		get: `SELECT value FROM ` + kv + ` WHERE key = $1 AND ` + live,
		put: `INSERT INTO ` + kv + ` (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = NULL`,
		putTTL: `INSERT INTO ` + kv + ` (key, value, expires_at) VALUES ($1, $2, now() + $3 * interval '1 microsecond')
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
		// Every write in one statement, so one round trip and one transaction; a ttl of 0 means no expiry. The
		// caller keeps the last write of a key: ON CONFLICT cannot touch a row twice in one statement.
		putBatch: `INSERT INTO ` + kv + ` (key, value, expires_at)
			SELECT k, v, CASE WHEN ttl > 0 THEN now() + ttl * interval '1 microsecond' END
			FROM unnest($1::bytea[], $2::bytea[], $3::bigint[]) AS w(k, v, ttl) ORDER BY k
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
		del:       `DELETE FROM ` + kv + ` WHERE key = $1`,
		listFrom:  `SELECT key FROM ` + kv + ` WHERE key >= $1 AND ` + live + ` ORDER BY key`,
		listRange: `SELECT key FROM ` + kv + ` WHERE key >= $1 AND key < $2 AND ` + live + ` ORDER BY key`,
		// An expired row counts as absent: the insert takes its place.
		casInsert: `INSERT INTO ` + kv + ` AS t (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = NULL
			WHERE t.expires_at IS NOT NULL AND t.expires_at <= now()`,
		// Under READ COMMITTED a concurrent update of the row makes this one wait, then re-check value = $2
		// against the new row: exactly one of two racing swaps from the same old value wins.
		casUpdate: `UPDATE ` + kv + ` SET value = $3, expires_at = NULL WHERE key = $1 AND value = $2 AND ` + live,
		// Insert-if-absent in one statement: an expired row is taken over, a live one is kept (rewritten with its own
		// values, so that RETURNING yields it either way). The row lock makes racing claims wait, then see the winner.
		claim: `INSERT INTO ` + kv + ` AS t (key, value, expires_at) VALUES ($1, $2, now() + $3 * interval '1 microsecond')
			ON CONFLICT (key) DO UPDATE SET
				value = CASE WHEN t.expires_at <= now() THEN EXCLUDED.value ELSE t.value END,
				expires_at = CASE WHEN t.expires_at <= now() THEN EXCLUDED.expires_at ELSE t.expires_at END
			RETURNING value`,
		lease: `INSERT INTO ` + leases + ` AS l (key, owner, until) VALUES ($1, $2, now() + $3 * interval '1 microsecond')
			ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
			WHERE l.owner = EXCLUDED.owner OR l.until <= now()`,
		release: `DELETE FROM ` + leases + ` WHERE key = $1 AND owner = $2`,
		// The outer expiry test is re-checked on a row another transaction rewrote meanwhile, so a fresh Put of
		// a key that had just expired survives the sweep.
		// SKIP LOCKED: the sweep never waits for a row another statement holds, so it cannot close a cycle with a
		// statement that locks several rows (PutBatch, a grouped statement); such a row is swept next time.
		sweepKeys: `DELETE FROM ` + kv + ` WHERE key IN (SELECT key FROM ` + kv + ` WHERE expires_at <= now() LIMIT $1
			FOR UPDATE SKIP LOCKED) AND expires_at <= now()`,
		sweepLeases:  `DELETE FROM ` + leases + ` WHERE until <= now()`,
		scanFrom:     `SELECT key, value FROM ` + kv + ` WHERE key >= $1 AND ` + live + ` ORDER BY key`,
		scanRange:    `SELECT key, value FROM ` + kv + ` WHERE key >= $1 AND key < $2 AND ` + live + ` ORDER BY key`,
		putRoutes:    `INSERT INTO ` + routes + ` (route, task) SELECT r, $1 FROM unnest($2::bytea[]) AS r ON CONFLICT DO NOTHING`,
		deleteRoutes: `DELETE FROM ` + routes + ` WHERE task = $1 AND route = ANY($2::bytea[]) AND octet_length(route) > 0`,
		deleteTask:   `DELETE FROM ` + routes + ` WHERE task = $1`,
		bump: `INSERT INTO ` + routes + ` AS g (route, task, gen) VALUES (''::bytea, $1, 1)
			ON CONFLICT (route, task) DO UPDATE SET gen = g.gen + 1 RETURNING gen`,
		// Functions of the schema (schema.go), so that PostgreSQL plans their statements once per connection.
		lookup:       `SELECT * FROM ` + prefix + `tool_lookup($1, $2, $3) ORDER BY out_ord, out_task`,
		grouped:      `SELECT * FROM ` + prefix + `tool_grouped($1, $2, $3, $4, $5, $6, $7) ORDER BY out_ord, out_key`,
		setExpiry:    `INSERT INTO ` + expiry + ` (task, at) VALUES ($1, $2) ON CONFLICT (task) DO UPDATE SET at = EXCLUDED.at`,
		deleteExpiry: `DELETE FROM ` + expiry + ` WHERE task = $1`,
		// Walks the (at, task) index from the mark: the tasks not yet expired are never read.
		expired: `SELECT task, at FROM ` + expiry + ` WHERE at <= $1 AND (at, task) > ($2, $3)
			AND task >= $4 AND ($5::bytea IS NULL OR task < $5) ORDER BY at, task LIMIT $6`,
	}
}

// Get returns key's value, or store.ErrNotFound when it is absent or expired.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.queryRow(ctx, s.q.get, []any{[]byte(key)}, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres store: get %q: %w", key, err)
	}
	return v, nil
}

// Put sets key to value, without expiry.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.write(ctx, &writeCall{query: s.q.put, keys: [][]byte{[]byte(key)}, values: [][]byte{nonNil(value)}, ttls: []int64{0}}); err != nil {
		return fmt.Errorf("postgres store: put %q: %w", key, err)
	}
	return nil
}

// PutTTL is Put for a value that Get, List and CompareAndSwap no longer see once ttl has passed on the database's
// clock.
func (s *Store) PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	w := &writeCall{query: s.q.putTTL, keys: [][]byte{[]byte(key)}, values: [][]byte{nonNil(value)}, ttls: []int64{ttl.Microseconds()}}
	var err error
	if w.ttls[0] > 0 {
		err = s.write(ctx, w)
	} else { // already expired: a grouped statement would read a ttl of 0 as none
		err = s.writeOne(ctx, w)
	}
	if err != nil {
		return fmt.Errorf("postgres store: put %q: %w", key, err)
	}
	return nil
}

// PutBatch writes every one of writes in one statement (one round trip, one transaction): a Write with a TTL > 0
// expires as PutTTL's value does, on the database's clock; of two writes of one key the last counts.
func (s *Store) PutBatch(ctx context.Context, writes []store.Write) error {
	last := make(map[string]int, len(writes))
	for i, w := range writes {
		if err := checkKey(w.Key); err != nil {
			return err
		}
		last[w.Key] = i
	}
	w := &writeCall{query: s.q.putBatch}
	w.keys, w.values, w.ttls = make([][]byte, 0, len(last)), make([][]byte, 0, len(last)), make([]int64, 0, len(last))
	for i, wr := range writes {
		if last[wr.Key] != i {
			continue
		}
		w.keys, w.values, w.ttls = append(w.keys, []byte(wr.Key)), append(w.values, nonNil(wr.Value)), append(w.ttls, max(0, wr.TTL.Microseconds()))
	}
	if len(w.keys) == 0 {
		return nil
	}
	if err := s.write(ctx, w); err != nil {
		return fmt.Errorf("postgres store: put %d keys (%q, ...): %w", len(w.keys), w.keys[0], err)
	}
	return nil
}

// writeCall is a call of Put, PutTTL or PutBatch: its statement alone, and its distinct keys with their values and
// TTLs in microseconds (0: none), as a grouped statement (putBatch) takes them.
type writeCall struct {
	query        string
	keys, values [][]byte
	ttls         []int64
}

// write runs w, grouped with the writes that wait with it (WithGroupCommit).
func (s *Store) write(ctx context.Context, w *writeCall) error {
	if s.calls == nil {
		return s.writeOne(ctx, w)
	}
	return s.calls.do(ctx, &storeCall{write: w})
}

// writeOne runs w's statement alone.
func (s *Store) writeOne(ctx context.Context, w *writeCall) error {
	var err error
	if w.query == s.q.putBatch {
		_, err = s.exec(ctx, w.query, w.keys, w.values, w.ttls)
	} else if w.query == s.q.putTTL {
		_, err = s.exec(ctx, w.query, w.keys[0], w.values[0], w.ttls[0])
	} else {
		_, err = s.exec(ctx, w.query, w.keys[0], w.values[0])
	}
	return err
}

func (w *writeCall) eachKey(yield func(string) bool) bool {
	for _, k := range w.keys {
		if !yield(string(k)) {
			return false
		}
	}
	return true
}

// Delete removes key; an absent key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if _, err := s.exec(ctx, s.q.del, []byte(key)); err != nil {
		return fmt.Errorf("postgres store: delete %q: %w", key, err)
	}
	return nil
}

// List returns the live keys that start with prefix, sorted bytewise.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	var rows *sql.Rows
	var done func()
	var err error
	if end, ok := successor(prefix); ok {
		rows, done, err = s.query(ctx, s.q.listRange, []byte(prefix), end)
	} else {
		rows, done, err = s.query(ctx, s.q.listFrom, []byte(prefix))
	}
	if err != nil {
		return nil, fmt.Errorf("postgres store: list %q: %w", prefix, err)
	}
	defer done()
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("postgres store: list %q: %w", prefix, err)
		}
		keys = append(keys, string(k))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: list %q: %w", prefix, err)
	}
	return keys, nil
}

// CompareAndSwap sets key to next when its live value is old — nil old means the key must be absent or expired —
// and reports whether it did. The new value has no expiry.
func (s *Store) CompareAndSwap(ctx context.Context, key string, old, next []byte) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	var res sql.Result
	var err error
	if old == nil {
		res, err = s.exec(ctx, s.q.casInsert, []byte(key), nonNil(next))
	} else {
		res, err = s.exec(ctx, s.q.casUpdate, []byte(key), old, nonNil(next))
	}
	if err != nil {
		return false, fmt.Errorf("postgres store: compare-and-swap %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("postgres store: compare-and-swap %q: %w", key, err)
	}
	return n == 1, nil
}

// Claim sets key to value, expiring ttl after the database's now(), when key is absent or expired, and reports
// whether it did; when it did not, current is the live value. It takes one round trip, and of racing claims
// exactly one wins.
func (s *Store) Claim(ctx context.Context, key string, value []byte, ttl time.Duration) (claimed bool, current []byte, err error) {
	if err := checkKey(key); err != nil {
		return false, nil, err
	}
	c := &claimCall{key: []byte(key), value: nonNil(value), ttl: ttl.Microseconds()}
	if s.calls == nil || c.ttl <= 0 { // a claim already expired: a grouped statement would read a ttl of 0 as none
		err = s.claimOne(ctx, c)
	} else {
		err = s.calls.do(ctx, &storeCall{claim: c})
	}
	if err != nil {
		return false, nil, fmt.Errorf("postgres store: claim %q: %w", key, err)
	}
	if string(c.current) == string(value) {
		return true, nil, nil
	}
	return false, c.current, nil
}

// claimCall is a call of Claim, and the live value it found (its own when it claimed).
type claimCall struct {
	key, value []byte
	ttl        int64 // µs
	current    []byte
}

func (s *Store) claimOne(ctx context.Context, c *claimCall) error {
	return s.queryRow(ctx, s.q.claim, []any{c.key, c.value, c.ttl}, &c.current)
}

// Lease acquires or renews the lease on key for owner until ttl from the database's now() and reports whether
// owner holds it. A lease whose holder let it run out is free for anyone. Leases and keys are separate namespaces.
func (s *Store) Lease(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	res, err := s.exec(ctx, s.q.lease, []byte(key), []byte(owner), ttl.Microseconds())
	if err != nil {
		return false, fmt.Errorf("postgres store: lease %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("postgres store: lease %q: %w", key, err)
	}
	return n == 1, nil
}

// Release gives up owner's lease on key; it does nothing when owner does not hold it.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	if _, err := s.exec(ctx, s.q.release, []byte(key), []byte(owner)); err != nil {
		return fmt.Errorf("postgres store: release %q: %w", key, err)
	}
	return nil
}

// checkKey refuses keys the primary-key index cannot hold, with an error naming the length, not the database's.
func checkKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("postgres store: key of %d bytes is longer than %d", len(key), MaxKeyLen)
	}
	return nil
}

// nonNil maps a nil value to an empty one: a nil []byte would be sent as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// successor returns the smallest byte string greater than every string that starts with prefix, for a range
// scan; ok is false when there is none (prefix empty or all 0xff), and the scan has no upper bound.
func successor(prefix string) (end []byte, ok bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			b[i]++
			return b[:i+1], true
		}
	}
	return nil, false
}
