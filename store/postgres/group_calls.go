package postgres

import (
	"context"
	"fmt"

	"github.com/commonagents-go/tool/store"
)

// storeCall is one call that the Store groups (WithGroupCommit): a Claim, a write (Put, PutTTL, PutBatch) or a
// Lookup. Calls of all three kinds share one statement, so that the deliveries a replica works on at once cost
// one round trip, one transaction and one commit flush between them.
type storeCall struct {
	claim  *claimCall
	write  *writeCall
	lookup *lookupCall
}

// grouped makes the Store group its calls over lanes lanes (WithGroupCommit); 0 leaves each alone.
func (s *Store) grouped(lanes int) {
	if lanes == 0 {
		return
	}
	s.calls = &group[*storeCall]{lanes: lanes, wait: s.acquire, one: s.callOne, many: s.callMany,
		keys: (*storeCall).eachKey}
}

// eachKey yields the keys c writes: none share a statement, which ON CONFLICT could not take twice.
func (c *storeCall) eachKey(yield func(string) bool) bool {
	switch {
	case c.claim != nil:
		return yield(string(c.claim.key))
	case c.write != nil:
		return c.write.eachKey(yield)
	}
	return true
}

// callOne runs c alone, with the statement it has without grouping.
func (s *Store) callOne(ctx context.Context, c *storeCall) error {
	switch {
	case c.claim != nil:
		return s.claimOne(ctx, c.claim)
	case c.write != nil:
		return s.writeOne(ctx, c.write)
	}
	return s.lookupOne(ctx, c.lookup)
}

// callMany runs calls, no two writing one key, in the grouped statement: the claims' and the writes' rows in one
// insert, and the lookups' routes, each with its call's after and limit.
func (s *Store) callMany(ctx context.Context, calls []*storeCall) error {
	var keys, values, claimKeys, routes, afters [][]byte
	var ttls, limits []int64
	var owners []*lookupCall // of each route
	claims := map[string]*claimCall{}
	for _, c := range calls {
		switch {
		case c.claim != nil:
			keys, values, ttls = append(keys, c.claim.key), append(values, c.claim.value), append(ttls, c.claim.ttl)
			claimKeys = append(claimKeys, c.claim.key)
			claims[string(c.claim.key)] = c.claim
		case c.write != nil:
			keys, values, ttls = append(keys, c.write.keys...), append(values, c.write.values...), append(ttls, c.write.ttls...)
		default:
			l := c.lookup
			l.out, l.first = make([]store.RouteHits, len(l.routes)), len(routes)
			for _, r := range l.routes {
				routes, afters, limits = append(routes, r), append(afters, []byte(l.after)), append(limits, int64(l.limit))
				owners = append(owners, l)
			}
		}
	}
	rows, done, err := s.query(ctx, s.q.grouped, nonEmpty(keys), nonEmpty(values), nonEmptyInts(ttls), nonEmpty(claimKeys),
		nonEmpty(routes), nonEmpty(afters), nonEmptyInts(limits))
	if err != nil {
		return err
	}
	defer done()
	defer rows.Close()
	for rows.Next() {
		var ord, gen int64
		var key, value []byte
		if err := rows.Scan(&ord, &key, &value, &gen); err != nil {
			return err
		}
		if ord == 0 {
			if c := claims[string(key)]; c != nil {
				c.current = value
				delete(claims, string(key))
			}
			continue
		}
		l := owners[ord-1]
		l.hit(int(ord-1)-l.first, key, gen)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(claims) > 0 {
		return fmt.Errorf("%d claims returned no row", len(claims))
	}
	return nil
}

// groupedQuery is callMany's statement. $1–$3 are the rows to insert (key, value, TTL in µs, 0: none), $4 the keys
// among them that are claims: a claim keeps a live row as it is, a write replaces it. The rows are taken in key
// order, so that two grouped statements never wait on each other's row locks. The claims' rows come back with ord
// 0 and their live values; $5–$7 are the routes looked up, each with its after and limit, and their hits come back
// with the route's ordinal, as Lookup's statement returns them.
func groupedQuery(kv, routes string) string {
	const live = `(t.expires_at IS NULL OR t.expires_at > now())`
	return `WITH w AS (INSERT INTO ` + kv + ` AS t (key, value, expires_at)
			SELECT k, v, CASE WHEN ttl > 0 THEN now() + ttl * interval '1 microsecond' END
			FROM unnest($1::bytea[], $2::bytea[], $3::bigint[]) AS w(k, v, ttl) ORDER BY k
			ON CONFLICT (key) DO UPDATE SET
				value = CASE WHEN EXCLUDED.key = ANY($4::bytea[]) AND ` + live + ` THEN t.value ELSE EXCLUDED.value END,
				expires_at = CASE WHEN EXCLUDED.key = ANY($4::bytea[]) AND ` + live + ` THEN t.expires_at ELSE EXCLUDED.expires_at END
			RETURNING key, value)
		SELECT 0::bigint AS ord, key, value, 0::bigint AS gen FROM w WHERE key = ANY($4::bytea[])
		UNION ALL
		SELECT r.ord, h.task, NULL, coalesce(g.gen, 0)
			FROM unnest($5::bytea[], $6::bytea[], $7::bigint[]) WITH ORDINALITY AS r(route, after, lim, ord)
			CROSS JOIN LATERAL (SELECT x.task FROM ` + routes + ` x WHERE x.route = r.route AND x.task > r.after
				ORDER BY x.task LIMIT r.lim + 1) h
			LEFT JOIN ` + routes + ` g ON g.route = ''::bytea AND g.task = h.task
		ORDER BY ord, key`
}

// nonEmpty and nonEmptyInts send an empty array, not NULL, for no rows.
func nonEmpty(a [][]byte) [][]byte {
	if a == nil {
		return [][]byte{}
	}
	return a
}

func nonEmptyInts(a []int64) []int64 {
	if a == nil {
		return []int64{}
	}
	return a
}
