package tool_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden problem lists in testdata/invalid")

// okSettings are the settings each testdata/ok manifest needs.
var okSettings = map[string]map[string]any{
	"github-file.yaml":   {"github.token": "ghp-secret", "github.owner": "octo", "github.repo": "hello"},
	"github-pr.yaml":     {"github_webhook_secret": "whsec"},
	"feed-poll.yaml":     {"api_key": "k"},
	"session.yaml":       {"api_key": "k"},
	"mcp.yaml":           {"github_token": "t", "docs_token": "d"},
	"cel.yaml":           {"github.token": "t"},
	"issue-tracker.yaml": {"webhook_secret": "s"},
}

func TestLoadOK(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/ok/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("want at least 10 manifests in testdata/ok, got %d (%v)", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			var opts []tool.Option
			if s, ok := okSettings[filepath.Base(file)]; ok {
				opts = append(opts, tool.WithSettings(s))
			}
			tl, err := tool.LoadFile(context.Background(), file, opts...)
			if filepath.Base(file) == "k8s-job.yaml" {
				// kubernetes_job is opt-in: without the blank import the manifest names the package to import.
				assertProblem(t, err, "actions[0].execute.kubernetes_job", "unsupported")
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			fns := tl.Functions(tool.Capability{})
			// A top-level openapi block adds one action per operation of its document (the Petstore's 19).
			if want := len(tl.Manifest().Actions) + expandedOK[filepath.Base(file)]; len(fns) != want {
				t.Errorf("Functions returned %d, want %d", len(fns), want)
			}
			for _, fn := range fns {
				assertLLMSchema(t, fn)
			}
		})
	}
}

// expandedOK counts the actions the top-level blocks of testdata/ok manifests expand into.
var expandedOK = map[string]int{"openapi.yaml": 19}

func assertProblem(t *testing.T, err error, path, typ string) {
	t.Helper()
	var verr *tool.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("want a *ValidationError, got %v", err)
	}
	for _, p := range verr.Problems {
		if p.Path == path && p.Type == typ {
			return
		}
	}
	t.Fatalf("no %s problem at %s in:\n%v", typ, path, err)
}

// TestLoadInvalid loads each testdata/invalid/*.txtar manifest and compares its problems with the archive's
// "want" file: one line per problem, "type path: detail". Only type and path are compared; -update rewrites the
// whole list.
func TestLoadInvalid(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/invalid/*.txtar")
	if err != nil || len(files) < 40 {
		t.Fatalf("want at least 40 archives in testdata/invalid, got %d (%v)", len(files), err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := txtar.Parse(data)
			manifest, ok := ar.Get("manifest.yaml")
			if !ok {
				t.Fatal("archive has no manifest.yaml")
			}
			_, err = tool.Load(context.Background(), manifest)
			var verr *tool.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("want a *ValidationError, got %v", err)
			}
			got := problemLines(verr.Problems)
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files[i].Data = []byte(got)
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, _ := ar.Get("want")
			if g, w := keysOf(got), keysOf(string(want)); g != w {
				t.Errorf("problems (type path):\n%s\nwant:\n%s\nfull:\n%s", g, w, got)
			}
		})
	}
}

func problemLines(ps []tool.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s %s: %s\n", p.Type, p.Path, p.Detail)
	}
	return b.String()
}

// keysOf keeps "type path" of each golden line.
func keysOf(lines string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		if line == "" {
			continue
		}
		typ, rest, _ := strings.Cut(line, " ")
		path, _, _ := strings.Cut(rest, ": ")
		out = append(out, typ+" "+path)
	}
	return strings.Join(out, "\n")
}
