package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the schema version this package creates and understands: len(migrations).
const SchemaVersion = 3

// migrations are the schema's versions in order: migrations[i] brings version i to i+1, one statement at a time.
// Never edit a released step; append a new one. %[1]s is the schema prefix ("" or `"name".`).
var migrations = [][]string{
	{
		`CREATE TABLE %[1]stool_kv (
			key        bytea PRIMARY KEY,
			value      bytea NOT NULL,
			expires_at timestamptz
		)`,
		`CREATE INDEX ON %[1]stool_kv (expires_at) WHERE expires_at IS NOT NULL`,
		`CREATE TABLE %[1]stool_leases (
			key   bytea PRIMARY KEY,
			owner bytea NOT NULL,
			until timestamptz NOT NULL
		)`,
	},
	{
		// The routing index (store.RouteStore, routes.go). A task's generation is the row of the empty route,
		// which no route of the library's is: one table, one primary key, one index by task (for a task's close).
		`CREATE TABLE %[1]stool_routes (
			route bytea NOT NULL,
			task  bytea NOT NULL,
			gen   bigint NOT NULL DEFAULT 0,
			PRIMARY KEY (route, task)
		)`,
		`CREATE INDEX ON %[1]stool_routes (task)`,
	},
	{
		// The tasks' expiries (store.TaskExpiryStore, expiry.go), read in (at, task) order by a sweep.
		`CREATE TABLE %[1]stool_task_expiry (
			task bytea PRIMARY KEY,
			at   timestamptz NOT NULL
		)`,
		`CREATE INDEX ON %[1]stool_task_expiry (at, task)`,
	},
}

// migrate brings the schema to SchemaVersion in one transaction. A transaction-scoped advisory lock, keyed by the
// schema name, serialises processes that open the same schema at once: the second waits, then sees the first's
// work and has nothing to do. DDL is transactional in PostgreSQL, so a failed step leaves nothing behind.
func migrate(ctx context.Context, db *sql.DB, schema, prefix string) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(schema)); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if schema != "" {
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	const versionTable = `CREATE TABLE IF NOT EXISTS %stool_schema_version (version integer NOT NULL)`
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(versionTable, prefix)); err != nil {
		return fmt.Errorf("create version table: %w", err)
	}
	version := 0
	err = tx.QueryRowContext(ctx, `SELECT version FROM `+prefix+`tool_schema_version`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+prefix+`tool_schema_version (version) VALUES (0)`); err != nil {
			return fmt.Errorf("record version: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read version: %w", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("schema version %d is newer than this library's %d: upgrade the library", version, SchemaVersion)
	}
	for v := version; v < SchemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(stmt, prefix)); err != nil {
				return fmt.Errorf("step %d: %w", v+1, err)
			}
		}
	}
	if version < SchemaVersion {
		if _, err := tx.ExecContext(ctx, `UPDATE `+prefix+`tool_schema_version SET version = $1`, SchemaVersion); err != nil {
			return fmt.Errorf("record version: %w", err)
		}
	}
	return tx.Commit()
}

// lockKey maps a schema name to the advisory lock that guards its migration.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/commonagents-go/tool/store/postgres\x00" + schema))
	return int64(h.Sum64())
}
