package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/commonagents-go/tool/store"
)

// Scan returns the live keys that start with prefix with their values, sorted bytewise, with one range scan over
// the primary key: tool.Tool.RestoreTasks reads all of a tool's stored tasks with it.
func (s *Store) Scan(ctx context.Context, prefix string) ([]store.Entry, error) {
	var rows *sql.Rows
	var done func()
	var err error
	if end, ok := successor(prefix); ok {
		rows, done, err = s.query(ctx, s.q.scanRange, []byte(prefix), end)
	} else {
		rows, done, err = s.query(ctx, s.q.scanFrom, []byte(prefix))
	}
	return entries(prefix, rows, done, err)
}

// ScanExcept is Scan without the keys that start with one of except: one statement, a range scan over the
// primary key for each part of prefix's range that except leaves (a UNION ALL of plain range scans with the
// bounds as parameters, which the planner estimates from the key's statistics; ranges drawn from arrays by
// unnest were estimated at a share of the table, and past a few million rows would be JIT-compiled each time).
func (s *Store) ScanExcept(ctx context.Context, prefix string, except []string) ([]store.Entry, error) {
	lows, highs, ok := scanRanges(prefix, except)
	if !ok { // no upper bound to the prefix's range (empty, or all 0xff): filter a plain Scan
		out, err := s.Scan(ctx, prefix)
		return slices.DeleteFunc(out, func(e store.Entry) bool {
			return slices.ContainsFunc(except, func(x string) bool { return strings.HasPrefix(e.Key, x) })
		}), err
	}
	if len(lows) == 0 {
		return nil, nil // all of it excepted
	}
	args := make([]any, 0, 2*len(lows))
	for i := range lows {
		args = append(args, lows[i], highs[i])
	}
	rows, done, err := s.query(ctx, s.q.scanRanges(len(lows)), args...)
	return entries(prefix, rows, done, err)
}

// entries reads the (key, value) rows of a scan of prefix (whose query returned rows, done and err) and releases
// them.
func entries(prefix string, rows *sql.Rows, done func(), err error) ([]store.Entry, error) {
	if err != nil {
		return nil, fmt.Errorf("postgres store: scan %q: %w", prefix, err)
	}
	defer done()
	defer rows.Close()
	var out []store.Entry
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("postgres store: scan %q: %w", prefix, err)
		}
		out = append(out, store.Entry{Key: string(k), Value: v})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres store: scan %q: %w", prefix, err)
	}
	return out, nil
}

// scanRanges splits the range of the keys under prefix into the [low, high) ranges that the prefixes of except
// leave, in order; ok is false when prefix's range has no upper bound.
func scanRanges(prefix string, except []string) (lows, highs [][]byte, ok bool) {
	end, ok := successor(prefix)
	if !ok {
		return nil, nil, false
	}
	low := []byte(prefix)
	for _, x := range slices.Sorted(slices.Values(except)) {
		xEnd, bounded := successor(x)
		if bounded && bytes.Compare(xEnd, low) <= 0 {
			continue // before what is left
		}
		if cut := min(string(end), x); cut > string(low) {
			lows, highs = append(lows, low), append(highs, []byte(cut))
		}
		if !bounded || bytes.Compare(xEnd, end) >= 0 {
			return lows, highs, true // the rest is cut
		}
		low = xEnd
	}
	return append(lows, low), append(highs, end), true
}

var (
	_ store.ScanStore        = (*Store)(nil)
	_ store.PartialScanStore = (*Store)(nil)
)
