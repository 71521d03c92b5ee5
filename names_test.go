package tool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// The renamed identifiers of issue 21 keep their old names, which behave exactly as the new ones.
func TestDeprecatedNamesStillWork(t *testing.T) {
	if tool.Kind != tool.ManifestKind || !strings.Contains(tool.ManifestKind, "tool") {
		t.Fatalf("Kind %q, ManifestKind %q", tool.Kind, tool.ManifestKind)
	}

	t.Run("Router.Mount registers the same endpoint as Register", func(t *testing.T) {
		for _, register := range []func(*tool.Router, *http.ServeMux){
			func(r *tool.Router, m *http.ServeMux) { r.Register(m) },
			func(r *tool.Router, m *http.ServeMux) { r.Mount(m) }, //nolint:staticcheck // the deprecated name, on purpose
		} {
			mux := http.NewServeMux()
			register(tool.NewRouter(), mux)
			rec := httptest.NewRecorder() // the Router answers a GET with 405; a mux without it, 404
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tool.DefaultWebhookPrefix+"/ns/name", nil))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
				t.Fatalf("the mux has no webhook endpoint: %d %s", rec.Code, rec.Body)
			}
		}
	})

	ctx := context.Background()
	tl, err := tool.LoadFile(ctx, "testdata/ok/cel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("CatalogEntry.ToolName is Function, and only tool_name is encoded", func(t *testing.T) {
		cat := tl.Catalog(tool.Capability{})
		fns := tl.Functions(tool.Capability{})
		if len(cat) == 0 || len(cat) != len(fns) {
			t.Fatalf("%d catalog entries, %d functions", len(cat), len(fns))
		}
		for i, e := range cat {
			if e.Function != fns[i].Name || e.ToolName != e.Function { //nolint:staticcheck // the deprecated field, on purpose
				t.Errorf("entry %d: Function %q, ToolName %q, function %q", i, e.Function, e.ToolName, fns[i].Name)
			}
		}
	})

	t.Run("ResumeTask and ResumeTasks restore as RestoreTask and RestoreTasks", func(t *testing.T) {
		store := tool.NewMemoryStore()
		tl, err := tool.LoadFile(ctx, "testdata/ok/cel.yaml", tool.WithStore(store))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			task, err := tl.NewTask(ctx, tool.TaskConfig{ID: id, Context: celYAMLContext})
			if err != nil {
				t.Fatal(err)
			}
			if err := task.Detach(ctx); err != nil {
				t.Fatal(err)
			}
		}
		task, err := tl.ResumeTask(ctx, tool.TaskConfig{ID: "a", Context: celYAMLContext}) //nolint:staticcheck // the deprecated name
		if err != nil || task.ID() != "a" {
			t.Fatalf("ResumeTask: %v", err)
		}
		if err := task.Detach(ctx); err != nil {
			t.Fatal(err)
		}
		tasks, err := tl.ResumeTasks(ctx, func(string) (tool.TaskConfig, bool) { return tool.TaskConfig{Context: celYAMLContext}, true }) //nolint:staticcheck
		if err != nil || len(tasks) != 2 {
			t.Fatalf("ResumeTasks: %d tasks, %v", len(tasks), err)
		}
		for _, task := range tasks {
			if err := task.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tl.ResumeTask(ctx, tool.TaskConfig{ID: "a", Context: celYAMLContext}); err == nil { //nolint:staticcheck
			t.Fatal("ResumeTask found a closed task")
		}
	})
}

// celYAMLContext is the task context testdata/ok/cel.yaml's format_date reads.
var celYAMLContext = map[string]any{"agent": map[string]any{"namespace": "team-a"}}
