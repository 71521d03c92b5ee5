package tool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// laughs is a manifest with a "billion laughs" block: levels anchors, each a list of nine aliases of the one
// before (6 levels: 485 bytes that expand to over half a million nodes).
func laughs(levels int) []byte {
	src := manifestHeader("laughs") + "x-bomb:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i <= levels; i++ {
		src += fmt.Sprintf("  a%d: &a%d [*a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d]\n", i, i, i-1)
	}
	return []byte(src)
}

// Hostile manifests are refused with one clear problem in at most 10 MiB allocated: aliases are counted before
// anything expands them, and a refusal for size or aliases is not located (locating parses the whole source).
func TestLoadRefusesHostileManifestsCheaply(t *testing.T) {
	huge := append([]byte(manifestHeader("huge")+"x: |\n"), bytes.Repeat([]byte("  xxxxxxxxxxxxxx\n"), 1<<20)...) // 16 MiB
	tests := []struct {
		name   string
		src    []byte
		detail string
	}{
		{"6 levels of aliases", laughs(6), "YAML aliases would expand the manifest by more than 10000 nodes"},
		{"10 levels of aliases", laughs(10), "YAML aliases would expand the manifest by more than 10000 nodes"},
		{"16 MiB", huge, "larger than the limit of 4194304"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(1, func() { _, err = tool.Load(context.Background(), tt.src) })
			var verr *tool.ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) != 1 || !strings.Contains(verr.Problems[0].Detail, tt.detail) {
				t.Fatalf("Load = %v, want one problem saying %q", err, tt.detail)
			}
			if n > 10<<20 {
				t.Errorf("refusing it allocated %.1f MiB, want at most 10", n/mib)
			}
		})
	}
}

// LoadFile refuses a file over maxManifestBytes having read no more than the limit.
func TestLoadFileRefusesHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, bytes.Repeat([]byte("# xxxxxxxxxxxxxx\n"), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	n := allocated(1, func() { _, err = tool.LoadFile(context.Background(), path) })
	var verr *tool.ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 1 || !strings.Contains(verr.Problems[0].Detail, "17825792 bytes, larger than the limit") {
		t.Fatalf("LoadFile = %v, want the size problem", err)
	}
	if n > 10<<20 {
		t.Errorf("refusing it allocated %.1f MiB, want at most 10", n/mib)
	}
}

// Aliases that add a bounded number of nodes still load.
func TestLoadAcceptsModestAliases(t *testing.T) {
	src := manifestHeader("aliases") + `actions:
  - name: one
    description: One.
    parameters: &params
      properties:
        x: {type: string}
        z: {type: string, default: "z"}
    execute:
      cel:
        expression: "input.x"
  - name: two
    description: Two.
    parameters: *params
    execute:
      cel:
        expression: "input.z"
`
	tl := mustLoadSrc(t, src)
	if got := len(tl.Functions(tool.Capability{})); got != 2 {
		t.Errorf("functions = %d, want 2", got)
	}
}

// Load honours its context: an ended context ends it with the context's error.
func TestLoadHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, src := range [][]byte{laughs(10), []byte(manifestHeader("ok") + "actions: []\n")} {
		if _, err := tool.Load(ctx, src); !errors.Is(err, context.Canceled) {
			t.Errorf("Load with a cancelled context = %v, want context.Canceled", err)
		}
	}
}

// BenchmarkLoadHostile refuses each hostile manifest of TestLoadRefusesHostileManifestsCheaply; Plain loads a
// small valid manifest for comparison.
func BenchmarkLoadHostile(b *testing.B) {
	huge := append([]byte(manifestHeader("huge")+"x: |\n"), bytes.Repeat([]byte("  xxxxxxxxxxxxxx\n"), 1<<20)...)
	for _, c := range []struct {
		name string
		src  []byte
	}{
		{"Plain", []byte(manifestHeader("plain") + "actions:\n  - name: a\n    description: A.\n    execute:\n      cel:\n        expression: \"1\"\n")},
		{"Aliases6", laughs(6)},
		{"Aliases10", laughs(10)},
		{"Size16MiB", huge},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = tool.Load(context.Background(), c.src)
			}
		})
	}
}
