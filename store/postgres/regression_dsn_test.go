package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool/store/postgres"
)

// Open promises that errors never contain the dsn's password; libpq's key=value syntax allows spaces around '='
// and quoted values with escapes. No server is needed: each DSN fails to parse, or to connect (port 1).
func TestDSNPasswordNotInError(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://u:hunter2secret@127.0.0.1:1/db?sslmode=disable",
		"host=127.0.0.1 port=1 user=u password=hunter2secret sslmode=disable",
		"host=127.0.0.1 port=1 user=u password = hunter2secret sslmode=bogus",
		`host=127.0.0.1 port=1 user=u password='hunter2\' secret' sslmode=bogus`,
		`user=u password=hunter2\ secret host=127.0.0.1 port=abc`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := postgres.Open(ctx, dsn)
		cancel()
		if err == nil {
			t.Fatalf("Open(%q) succeeded", dsn)
		}
		if strings.Contains(err.Error(), "hunter2secret") || strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows (part of) the password: %v", err)
		}
	}
}
