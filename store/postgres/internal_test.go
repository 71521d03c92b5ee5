package postgres

import (
	"bytes"
	"testing"
)

func TestSchemaVersion(t *testing.T) {
	if SchemaVersion != len(migrations) {
		t.Fatalf("SchemaVersion = %d, but there are %d migrations", SchemaVersion, len(migrations))
	}
}

func TestSuccessor(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		want   string
		ok     bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"tasks/", "tasks0", true},
		{"a\xff", "b", true},
		{"a\xfe\xff\xff", "a\xff", true},
		{"\xff\xff", "", false},
	} {
		got, ok := successor(tc.prefix)
		if ok != tc.ok || !bytes.Equal(got, []byte(tc.want)) {
			t.Errorf("successor(%q) = %q, %v; want %q, %v", tc.prefix, got, ok, tc.want, tc.ok)
		}
	}
}
