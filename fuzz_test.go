package tool_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/txtar"
)

// FuzzLoad feeds arbitrary manifests to Load: it must never panic, and must either load a tool whose functions
// have valid schemas or return a *ValidationError with at least one problem.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/ok/*.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	archives, _ := filepath.Glob("testdata/invalid/*.txtar")
	for _, a := range archives {
		if data, err := os.ReadFile(a); err == nil {
			if m, ok := txtar.Parse(data).Get("manifest.yaml"); ok {
				f.Add(m)
			}
		}
	}
	f.Fuzz(func(t *testing.T, manifest []byte) {
		tl, err := tool.Load(context.Background(), manifest)
		if err != nil {
			var verr *tool.ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("Load error is not a ValidationError with problems: %v", err)
			}
			return
		}
		for _, fn := range tl.Functions(tool.Capability{}) {
			assertLLMSchema(t, fn)
		}
	})
}
