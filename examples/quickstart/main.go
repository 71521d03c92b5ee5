// Command quickstart walks through the library's main path: load a tool manifest, show its actions to an LLM as
// functions, start a task and invoke actions — a cel action and two stateless_http actions against a fake GitHub
// API served in-process — then close the task. Then it routes signed GitHub push webhooks to a task over HTTP
// through a Router. It needs no flags and no network.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
)

//go:embed github-file.yaml
var manifest []byte

func main() {
	ctx := context.Background()
	github := httptest.NewServer(fakeGitHub())
	defer github.Close()

	// Load validates everything once; settings come from the operator, never from the LLM.
	t, err := tool.Load(ctx, manifest, tool.WithSettings(map[string]any{
		"github.token":          "ghp-example-not-a-real-token",
		"github.owner":          "octo-org",
		"github.repo":           "hello-world",
		"github.api":            github.URL, // the fake GitHub below instead of https://api.github.com
		"github.webhook_secret": webhookSecret,
	}))
	if err != nil {
		var verr *tool.ValidationError
		if errors.As(err, &verr) {
			for _, p := range verr.Problems {
				fmt.Fprintln(os.Stderr, p)
			}
		}
		log.Fatal(err)
	}
	fmt.Printf("loaded %s/%s\n\n", t.Namespace(), t.Name())

	// What the LLM sees: one function per action, bound parameters hidden.
	capability := tool.Capability{Key: "repo-files", Bindings: map[string]any{"branch": "main"}}
	fmt.Println("functions for the LLM:")
	for _, f := range t.Functions(capability) {
		fmt.Printf("  %s — %s\n    parameters: %s\n", f.Name, f.Description, f.Parameters)
	}

	// What the host sees: flags for scheduling and policy.
	fmt.Println("\ncatalog (a capability that includes only read_file):")
	for _, e := range t.Catalog(tool.Capability{Key: "repo-files", Include: []string{"read_file"}}) {
		fmt.Printf("  %-22s policy=%-7s owner=%-5s read_only=%t destructive=%t\n",
			e.Function, e.Policy, e.RuntimeOwner, e.IsReadOnly, e.IsDestructive)
	}

	invoke(ctx, t, capability)
	webhooks(ctx, t)
	broken(ctx)
}

// invoke runs a task: the calls an LLM would make, by function name with JSON arguments.
func invoke(ctx context.Context, t *tool.Tool, capability tool.Capability) {
	task, err := t.NewTask(ctx, tool.TaskConfig{
		Capability: capability,
		Context:    map[string]any{"repository": "octo-org/hello-world"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer task.Close(ctx) // tears down whatever the task's backends started

	fmt.Println("\ncalls:")
	for _, call := range []struct{ function, args string }{
		{"repo_files_file_link", `{"path": "docs/guide.md"}`},
		{"repo_files_read_file", `{"path": "docs/guide.md"}`},
		{"repo_files_write_file", `{"path": "notes/todo.md", "content": "ship it", "branch": "evil"}`},
		{"repo_files_read_file", `{"path": "../../secrets"}`},
		{"repo_files_write_file", `{"path": "notes/todo.md"}`},
	} {
		res, err := task.InvokeFunction(ctx, call.function, []byte(call.args))
		if err != nil { // unrecoverable (SPEC §7.1): tell the user and end the conversation; the deferred Close ends the task
			fmt.Println("the tool cannot go on, so this conversation ends:", err)
			return
		}
		fmt.Printf("  %s %s\n    → %s", call.function, call.args, res.OutputJSON)
		if status, ok := res.ServerData["status"]; ok {
			fmt.Printf("  (HTTP %v, for the host only)", status)
		}
		if ignored := res.Telemetry.IgnoredArguments; len(ignored) > 0 {
			fmt.Printf("  (ignored bound %v)", ignored)
		}
		fmt.Println()
	}
	fmt.Println("\nallow list after the calls:", task.AllowList())
}

// fakeGitHub answers the two contents calls the manifest makes.
func fakeGitHub() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/octo-org/hello-world/contents/{path...}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# Guide\nRead me first.\n")
	})
	mux.HandleFunc("PUT /repos/octo-org/hello-world/contents/{path...}", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"commit": map[string]any{
			"message": body["message"], "branch": body["branch"], "sha": "3f2a9c1"}})
	})
	return mux
}

// webhookSecret is what the operator configured on both sides: in GitHub's webhook settings and as the
// github.webhook_secret setting.
const webhookSecret = "whsec-example-not-a-real-secret"

// webhooks serves the tool's webhook endpoint with a Router and POSTs GitHub push deliveries to it, as GitHub
// would: the activations reach the task's Sink before the endpoint answers.
func webhooks(ctx context.Context, t *tool.Tool) {
	activations := make(chan tool.Activation, 8)
	task, err := t.NewTask(ctx, tool.TaskConfig{
		// The bindings say whose pushes wake this task; they seal the allow list of owner and repo.
		Capability: tool.Capability{Key: "repo-events", Bindings: map[string]any{"owner": "octo-org", "repo": "hello-world"}},
		Context:    map[string]any{"repository": "octo-org/hello-world"}, // file_link reads {context.repository}
		// A host would queue the activation for the agent; the Router answers 202 only once Accept returned nil.
		Sink: tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
			activations <- a
			return nil
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer task.Close(ctx)

	router := tool.NewRouter(tool.RouterOptions{})
	if err := router.Add(task); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	router.Register(mux) // POST {prefix}/{namespace}/{tool}
	host := httptest.NewServer(mux)
	defer host.Close()
	endpoint := "/v1/webhooks/events" + "/" + t.Namespace() + "/" + t.Name()

	fmt.Printf("\nwebhooks (POST %s):\n", endpoint)
	ours, theirs := pushPayload("hello-world"), pushPayload("other-repo")
	for _, d := range []struct {
		what, id, secret, body string
	}{
		{"push", "d-1", webhookSecret, ours},
		// GitHub redelivers when it saw no 2xx in time. The task already activated for delivery d-1, so the
		// replay is discarded as a duplicate: the answer is still 202 (GitHub must stop retrying), with no
		// second activation.
		{"the same delivery again", "d-1", webhookSecret, ours},
		// The filter compares the payload with the bound owner and repo: another repository does not match.
		{"push to another repository", "d-2", webhookSecret, theirs},
		// Signed with the wrong secret: rejected before any filter runs.
		{"push with a wrong signature", "d-3", "guessed-secret", ours},
	} {
		code, status := post(host.URL+endpoint, d.id, d.secret, d.body)
		if code == http.StatusAccepted && len(activations) == 0 {
			status += ", no activation"
		}
		fmt.Printf("  %-28s → %s\n", d.what, status)
		for len(activations) > 0 {
			fmt.Printf("    activation: %s\n", (<-activations).Message)
		}
	}
}

// pushPayload is a (trimmed) GitHub push payload for octo-org/<repo>.
func pushPayload(repo string) string {
	return `{"ref": "refs/heads/main", "pusher": {"name": "mona"},
  "head_commit": {"id": "7fd1a60", "message": "Fix the guide's typo"},
  "repository": {"name": "` + repo + `", "full_name": "octo-org/` + repo + `", "owner": {"login": "octo-org"}}}`
}

// post delivers body as GitHub does, signed with secret, and returns the response's status.
func post(url, id, secret, body string) (code int, status string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", webhook.SignGitHub([]byte(secret), []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Status
}

// broken shows that a broken manifest reports every problem at once, with field paths and lines.
func broken(ctx context.Context) {
	_, err := tool.Load(ctx, []byte(brokenManifest))
	var verr *tool.ValidationError
	if errors.As(err, &verr) {
		fmt.Printf("\na broken manifest has %d problems:\n", len(verr.Problems))
		for _, p := range verr.Problems {
			fmt.Printf("  %s\n", p)
		}
	}
}

const brokenManifest = `kind: commonagents.info/v1beta2/tool
namespace: demo
name: broken
description: A manifest with mistakes.
actions:
  - name: fetch
    description: Fetches a page.
    execute:
      stateless_http:
        method: FETCH
        url: "https://{parameters.host}/pages/{parameters.page}"
        headers:
          X-Trace: "{paramters.trace}"
`
