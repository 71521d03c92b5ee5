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

// callMany runs calls, no two writing one key, in the grouped statement (the schema's function tool_grouped,
// schema.go): the claims' and the writes' rows in one insert, and the lookups' routes, each with its call's after
// and limit.
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
