package tool_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// TestGitHubPayloadsFilterQuietly delivers octokit's real GitHub payloads (push, issues, issue_comment,
// pull_request, pull_request_review; testdata/conformance/SOURCE.md) to the spec's github-pr tool, bound to each
// payload's repository. No payload may be a filter_error: a payload that lacks a field the filter reads (a push
// has no action) is filter_false, with the field named. An event activates exactly when the payload is what its
// filter describes, so the quiet rule hides no match.
func TestGitHubPayloadsFilterQuietly(t *testing.T) {
	t.Parallel()
	const secret = "octokit-payloads-secret"
	var payloads map[string]string
	readGzipJSON(t, "octokit-github-payloads.json.gz", &payloads)
	src, err := os.ReadFile("testdata/ok/github-pr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tl := mustLoadSrc(t, string(src), tool.WithSettings(map[string]any{"github_webhook_secret": secret}))
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range payloads {
			if !yield(k) {
				return
			}
		}
	})
	counts := map[string]int{}
	for _, name := range names {
		body := payloads[name]
		var p struct {
			Action string
			Issue  map[string]any
			Repo   struct {
				Name  string
				Owner struct{ Login string }
			} `json:"repository"`
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{
			"owner": p.Repo.Owner.Login, "repo": p.Repo.Name}}})
		d := deliver(t, task, tooltest.Signer{Secret: secret}.GitHub([]byte(body), ""))
		_, onPR := p.Issue["pull_request"]
		want := map[string]bool{"comment": p.Action == "created" && onPR, "review": p.Action == "submitted"}
		for _, a := range d.Activations {
			counts["activated"]++
			if !want[a.Event] {
				t.Errorf("%s: %s activated", name, a.Event)
			}
			delete(want, a.Event)
		}
		for _, x := range d.Discarded {
			counts[x.Reason]++
			if x.Reason != tool.ReasonFilterFalse {
				t.Errorf("%s: %s discarded as %s (%s), want filter_false", name, x.Event, x.Reason, x.Detail)
			}
			if want[x.Event] {
				t.Errorf("%s: %s not activated: %s %s", name, x.Event, x.Reason, x.Detail)
			}
			if p.Action == "" && !strings.Contains(x.Detail, "no such key: action") {
				t.Errorf("%s: %s detail %q does not name the missing field", name, x.Event, x.Detail)
			}
		}
	}
	if counts["activated"] == 0 || counts[tool.ReasonFilterFalse] == 0 {
		t.Errorf("outcomes %v: want both activations and filter_false", counts)
	}
	t.Logf("%d payloads: %v", len(names), counts)
}
