package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestInvokeCEL(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runTool(t, "invoke", filepath.Join(okDir, "cel.yaml"), "slugify",
		"--args", `{"title": "  Hello  Big World "}`)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var res struct {
		Action string         `json:"action"`
		Output map[string]any `json:"output"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if res.Action != "slugify" || res.Output["slug"] != "hello-big-world" {
		t.Errorf("result = %+v", res)
	}
}

func TestInvokeHTTPWithSettingsAndAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token env-token-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"login": "octo", "path": %q}`, r.URL.Path)
	}))
	defer srv.Close()
	manifest := writeFile(t, "me.yaml", `kind: commonagents.info/v1beta2/tool
namespace: tests
name: me
description: Who am I.
settings:
  properties:
    api: {type: string}
actions:
  - name: whoami
    description: Returns the login.
    execute:
      stateless_http:
        method: GET
        url: "{settings.api}/user"
        headers:
          Authorization: "token {auth.github()}"
        response_path: "$.login"
`)
	settings := writeFile(t, "settings.yaml", "api: "+srv.URL+"\n")
	t.Setenv("CLI_TEST_TOKEN", "env-token-1")
	code, stdout, stderr := runTool(t, "invoke", manifest, "whoami", "--settings", settings, "--auth-env", "github=CLI_TEST_TOKEN")
	if code != exitOK || !strings.Contains(stdout, `"output": "octo"`) {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// Without a token source the call is never sent unauthenticated: a recoverable error, exit 1.
	code, stdout, _ = runTool(t, "invoke", manifest, "whoami", "--settings", settings, "--auth-env", "github=CLI_TEST_MISSING")
	if code != exitProblem || !strings.Contains(stdout, `"kind": "unavailable"`) {
		t.Errorf("missing token: exit %d, stdout %s", code, stdout)
	}
}

func TestInvokeErrors(t *testing.T) {
	t.Parallel()
	cel := filepath.Join(okDir, "cel.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{"one argument", []string{"invoke", cel}, exitUsage, "want a manifest file and an action name", ""},
		{"bad args", []string{"invoke", cel, "slugify", "--args", "[1]"}, exitUsage, "--args must be a JSON object", ""},
		{"unknown action", []string{"invoke", cel, "nope"}, exitProblem, "unknown action", ""},
		{"missing argument", []string{"invoke", cel, "slugify"}, exitProblem, "", `"kind": "missing_fields"`},
		{"bad auth flag", []string{"invoke", cel, "slugify", "--auth-env", "github"}, exitUsage, "want provider=VAR", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTool(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || !strings.Contains(stdout, tt.stdout) {
				t.Errorf("exit %d (want %d)\nstdout %s\nstderr %s", code, tt.code, stdout, stderr)
			}
		})
	}
}

// --context gives the task context; without it, an action that reads a context key is refused before it runs,
// with the key named.
func TestInvokeContext(t *testing.T) {
	t.Parallel()
	cel := filepath.Join(okDir, "cel.yaml")
	code, stdout, stderr := runTool(t, "invoke", cel, "format_date", "--context", `{"agent": {"namespace": "team-a"}}`)
	if code != exitOK || !strings.Contains(stdout, `team-a`) {
		t.Errorf("with --context: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, _, stderr = runTool(t, "invoke", cel, "format_date")
	if code != exitProblem || !strings.Contains(stderr, "context.agent") {
		t.Errorf("without --context: exit %d, stderr %s; want the missing key named", code, stderr)
	}
	// The command line's user gives the context with --context: the Go field is not theirs to set.
	if !strings.Contains(stderr, `the key "agent" in Context (--context)`) || strings.Contains(stderr, "TaskConfig") {
		t.Errorf("without --context: stderr %s; want it to say --context, not TaskConfig.Context", stderr)
	}
	code, _, stderr = runTool(t, "invoke", cel, "format_date", "--context", `[1]`)
	if code != exitUsage || !strings.Contains(stderr, "want a JSON object") {
		t.Errorf("--context [1]: exit %d, stderr %s", code, stderr)
	}
}
