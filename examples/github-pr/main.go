// Command github-pr walks the spec's github-pr flow: the capability binds only the owner, so the task hears
// about a repository's pull-request comments once one of its own calls named that repository. It runs against
// a fake GitHub served in-process, needs no flags and no network.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
)

//go:embed github-pr.yaml
var manifest []byte

// webhookSecret is configured both in GitHub's webhook settings and as the github_webhook_secret setting.
const webhookSecret = "whsec-example-not-a-real-secret"

func main() {
	ctx := context.Background()
	const token = "ghp-example-not-a-real-token"
	github := httptest.NewServer(fakeGitHub(token))
	defer github.Close()

	t, err := tool.Load(ctx, manifest,
		tool.WithSettings(map[string]any{"github_api": github.URL, "github_webhook_secret": webhookSecret}),
		tool.WithAuth(staticToken(token)), // {auth.github()}
	)
	if err != nil {
		log.Fatal(err)
	}
	// owner is require_binding: the agent's capability fixes it. repo is left to the LLM's calls.
	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"owner": "octo-org"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer task.Close(ctx)
	fmt.Printf("task of %s/%s, bound to owner octo-org; allow list: %v\n", t.Namespace(), t.Name(), task.AllowList())

	step("a comment on octo-org/api, before any call")
	deliver(ctx, task, "d-1", comment("api", "mona", "Could this also cover retries?"))

	step("create_pr in octo-org/api")
	res, err := task.Invoke(ctx, "create_pr", map[string]any{"repo": "api", "title": "Add rate limiting", "head": "rate-limit"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("  → %s (HTTP %v)\n", res.OutputJSON, res.ServerData["status"])
	// The call's arguments joined the allow list before the request was sent, so an event the call causes
	// routes even when it arrives before the response.
	fmt.Printf("  allow list of repo: %v\n", task.AllowList()["repo"])

	step("a comment on octo-org/api")
	deliver(ctx, task, "d-2", comment("api", "hubot", "Looks good, one nit: rename the limiter."))

	step("a comment on octo-org/web, a repository the task never touched")
	deliver(ctx, task, "d-3", comment("web", "mona", "Unrelated."))
}

func step(what string) { fmt.Printf("\n%s:\n", what) }

// deliver hands a signed GitHub delivery to the task and prints what became of it. A host would receive it on a
// Router's endpoint; Task.Deliver shows the discard reasons a Router only counts (a Router would not even
// visit this task for octo-org/web: its index knows the task's allow list holds only api).
func deliver(ctx context.Context, task *tool.Task, id, body string) {
	h := http.Header{}
	h.Set("X-GitHub-Event", "issue_comment")
	h.Set("X-GitHub-Delivery", id)
	h.Set("X-Hub-Signature-256", webhook.SignGitHub([]byte(webhookSecret), []byte(body)))
	// Event narrows the delivery to one event of the tool, as a host mapping X-GitHub-Event would; without it
	// every webhook event (here also review) is tried and reported.
	d, err := task.Deliver(ctx, &tool.Inbound{Event: "comment", Headers: h, Body: []byte(body)})
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range d.Activations {
		fmt.Printf("  %s: activated (repo=%v) → %q\n", a.Event, a.Parameters["repo"], a.Message)
	}
	for _, x := range d.Discarded {
		fmt.Printf("  %s: discarded, %s", x.Event, x.Reason)
		if x.Detail != "" {
			fmt.Printf(" (%s)", x.Detail)
		}
		fmt.Println()
	}
}

// comment is a (trimmed) GitHub issue_comment payload for a comment on pull request #42 of octo-org/<repo>.
func comment(repo, user, text string) string {
	b, _ := json.Marshal(map[string]any{
		"action":     "created",
		"issue":      map[string]any{"number": 42, "pull_request": map[string]any{"url": "https://api.github.com/repos/octo-org/" + repo + "/pulls/42"}},
		"comment":    map[string]any{"user": map[string]any{"login": user}, "body": text},
		"repository": map[string]any{"name": repo, "owner": map[string]any{"login": "octo-org"}},
	})
	return string(b)
}

// staticToken is an AuthProvider handing out one token for every provider.
type staticToken string

func (s staticToken) Token(context.Context, string, tool.AuthRequest) (string, error) {
	return string(s), nil
}

// fakeGitHub opens pull requests for requests carrying the token.
func fakeGitHub(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /repos/{owner}/{repo}/pulls", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"message": "Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		var pr struct{ Title, Head, Base string }
		if err := json.NewDecoder(r.Body).Decode(&pr); err != nil || pr.Title == "" || pr.Head == "" {
			http.Error(w, `{"message": "Validation Failed"}`, http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"number": 42, "title": pr.Title,
			"html_url": "https://github.com/" + r.PathValue("owner") + "/" + r.PathValue("repo") + "/pull/42"})
	})
	return mux
}
