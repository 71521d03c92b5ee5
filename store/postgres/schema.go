package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the schema version this package creates and understands: len(migrations).
const SchemaVersion = 4

// migrations are the schema's versions in order: migrations[i] brings version i to i+1, one statement at a time.
// Never edit a released step; append a new one. %[1]s is the schema prefix ("" or `"name".`), %[2]s the dollar
// quote of a function's body (dollarQuote).
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
	{
		// The statement of WithGroupCommit (group_calls.go), in a function so that it is planned once per
		// connection. Prepared as it is, PostgreSQL planned it anew at every call, which cost about as much as
		// running it: a custom plan sees its arrays' lengths, so it always looks cheaper than the generic one,
		// which assumes 10 elements. The generic plan is the same one (nested loops over the primary keys).
		//
		// keys, vals and ttls are the rows to insert (TTL in µs, 0: none), claims the keys among them that are
		// claims: a claim keeps a live row as it is, a write replaces it. The rows are taken in key order, so
		// that two calls never wait on each other's row locks. The claims' rows come back with ordinal 0 and
		// their live values. routes are looked up, each with its after and limit; their tasks come back with the
		// route's ordinal (1-based) and generation, as Lookup's statement returns them.
		`CREATE FUNCTION %[1]stool_grouped(keys bytea[], vals bytea[], ttls bigint[], claims bytea[],
				routes bytea[], afters bytea[], lims bigint[])
			RETURNS TABLE (out_ord bigint, out_key bytea, out_value bytea, out_gen bigint)
			LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS %[2]s
		#variable_conflict use_column
		BEGIN
			RETURN QUERY WITH w AS (INSERT INTO %[1]stool_kv AS t (key, value, expires_at)
					SELECT k, v, CASE WHEN ttl > 0 THEN now() + ttl * interval '1 microsecond' END
					FROM unnest(keys, vals, ttls) AS w(k, v, ttl) ORDER BY k
					ON CONFLICT (key) DO UPDATE SET
						value = CASE WHEN EXCLUDED.key = ANY(claims) AND (t.expires_at IS NULL OR t.expires_at > now())
							THEN t.value ELSE EXCLUDED.value END,
						expires_at = CASE WHEN EXCLUDED.key = ANY(claims) AND (t.expires_at IS NULL OR t.expires_at > now())
							THEN t.expires_at ELSE EXCLUDED.expires_at END
					RETURNING key, value)
				SELECT 0::bigint AS ord, key, value, 0::bigint AS gen FROM w WHERE key = ANY(claims)
				UNION ALL
				SELECT r.ord, h.task, NULL, coalesce(g.gen, 0)
					FROM unnest(routes, afters, lims) WITH ORDINALITY AS r(route, after, lim, ord)
					CROSS JOIN LATERAL (SELECT x.task FROM %[1]stool_routes x WHERE x.route = r.route AND x.task > r.after
						ORDER BY x.task LIMIT r.lim + 1) h
					LEFT JOIN %[1]stool_routes g ON g.route = ''::bytea AND g.task = h.task
				ORDER BY ord, key;
		END
		%[2]s`,
		// Lookup's statement (routes.go), in a function for the same reason: per route, in the order given, the
		// first lim+1 tasks after after (one more than the limit tells whether there are more), each with its
		// generation.
		`CREATE FUNCTION %[1]stool_lookup(routes bytea[], after bytea, lim bigint)
			RETURNS TABLE (out_ord bigint, out_task bytea, out_gen bigint)
			LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS %[2]s
		BEGIN
			RETURN QUERY SELECT r.ord, h.task, coalesce(g.gen, 0)
				FROM unnest(routes) WITH ORDINALITY AS r(route, ord)
				CROSS JOIN LATERAL (SELECT x.task FROM %[1]stool_routes x WHERE x.route = r.route AND x.task > after
					ORDER BY x.task LIMIT lim + 1) h
				LEFT JOIN %[1]stool_routes g ON g.route = ''::bytea AND g.task = h.task
				ORDER BY r.ord, h.task;
		END
		%[2]s`,
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
	quote := dollarQuote(prefix)
	for v := version; v < SchemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(stmt, prefix, quote)); err != nil {
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

// dollarQuote is the tag that dollar-quotes a function's body in the migrations: $tool$, or the first of $tool1$,
// $tool2$, … that the schema prefix does not hold, so that no schema name can end a body early (the rest of a
// body holds no dollar sign, and the prefix's quotes keep a tag from spanning its edges).
func dollarQuote(prefix string) string {
	tag := "$tool$"
	for i := 1; strings.Contains(prefix, tag); i++ {
		tag = "$tool" + strconv.Itoa(i) + "$"
	}
	return tag
}

// lockKey maps a schema name to the advisory lock that guards its migration.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/commonagents-go/tool/store/postgres\x00" + schema))
	return int64(h.Sum64())
}
