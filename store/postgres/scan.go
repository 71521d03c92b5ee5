package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/commonagents-go/tool/store"
)

// Scan returns the live keys that start with prefix with their values, sorted bytewise, with one range scan over
// the primary key: tool.Tool.RestoreTasks reads all of a tool's stored tasks with it.
func (s *Store) Scan(ctx context.Context, prefix string) ([]store.Entry, error) {
	var rows *sql.Rows
	var err error
	if end, ok := successor(prefix); ok {
		rows, err = s.db.QueryContext(ctx, s.q.scanRange, []byte(prefix), end)
	} else {
		rows, err = s.db.QueryContext(ctx, s.q.scanFrom, []byte(prefix))
	}
	if err != nil {
		return nil, fmt.Errorf("postgres store: scan %q: %w", prefix, err)
	}
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

var _ store.ScanStore = (*Store)(nil)
