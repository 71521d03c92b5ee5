package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/events/webhook"
)

// assignedBody is a GitHub issues payload that the issue_assigned event of issue-tracker.yaml filters on.
const assignedBody = `{"action":"assigned","issue":{"number":7,"title":"Flaky test","html_url":"https://github.com/o/r/issues/7"},` +
	`"assignee":{"login":"alice"},"repository":{"id":4242}}`

const cliHookSecret = "cli-hook-secret"

// deliveryOut is the JSON printed by deliver.
type deliveryOut struct {
	Activations []struct {
		Event      string         `json:"event"`
		Message    string         `json:"message"`
		DeliveryID string         `json:"delivery_id"`
		Parameters map[string]any `json:"parameters"`
		Payload    map[string]any `json:"payload"`
	} `json:"activations"`
	Discarded []struct {
		Event  string `json:"event"`
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	} `json:"discarded"`
}

// outcomes summarises a deliveryOut as "event:activated" and "event:<reason>" items.
func (d deliveryOut) outcomes() []string {
	var out []string
	for _, a := range d.Activations {
		out = append(out, a.Event+":activated")
	}
	for _, x := range d.Discarded {
		out = append(out, x.Event+":"+x.Reason)
	}
	return out
}

func TestDeliver(t *testing.T) {
	t.Parallel()
	manifest := filepath.Join(okDir, "issue-tracker.yaml")
	settings := writeFile(t, "settings.yaml", "webhook_secret: "+cliHookSecret+"\n")
	body := writeFile(t, "body.json", assignedBody)
	sig := "X-Hub-Signature-256:" + webhook.SignGitHub([]byte(cliHookSecret), []byte(assignedBody))
	base := []string{"deliver", manifest, "issue_assigned", "--body", body, "--settings", settings}
	tests := []struct {
		name     string
		args     []string // after base
		outcomes string
	}{
		{"activated", []string{"--header", sig, "--header", "X-GitHub-Delivery: d-1",
			"--binding", "repo_id=4242", "--binding", "assignee=alice"}, "issue_assigned:activated"},
		{"another assignee", []string{"--header", sig, "--binding", "repo_id=4242", "--binding", "assignee=bob"},
			"issue_assigned:filter_false"},
		{"nothing allow-listed", []string{"--header", sig, "--binding", "repo_id=4242"}, "issue_assigned:empty_allow_list"},
		{"wrong secret", []string{"--header", "X-Hub-Signature-256:" + webhook.SignGitHub([]byte("guess"), []byte(assignedBody)),
			"--binding", "repo_id=4242", "--binding", "assignee=alice"}, "issue_assigned:bad_signature"},
		{"unsigned", []string{"--binding", "repo_id=4242", "--binding", "assignee=alice"}, "issue_assigned:bad_signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runTool(t, append(base, tt.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			var d deliveryOut
			if err := json.Unmarshal([]byte(stdout), &d); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
			}
			if got := strings.Join(d.outcomes(), " "); got != tt.outcomes {
				t.Errorf("outcomes = %q, want %q\n%s", got, tt.outcomes, stdout)
			}
			if strings.Contains(stdout, cliHookSecret) {
				t.Errorf("stdout holds the webhook secret:\n%s", stdout)
			}
		})
	}
}

func TestDeliverReport(t *testing.T) {
	t.Parallel()
	settings := writeFile(t, "settings.yaml", "webhook_secret: "+cliHookSecret+"\n")
	body := writeFile(t, "body.json", assignedBody)
	// "-" tries every event, and flags may come before the positional arguments.
	code, stdout, stderr := runTool(t, "deliver", "--settings", settings, "--body", body,
		"--header", "X-Hub-Signature-256:"+webhook.SignGitHub([]byte(cliHookSecret), []byte(assignedBody)),
		"--header", "X-GitHub-Delivery:d-7", "--binding", "repo_id=4242", "--binding", "assignee=alice",
		filepath.Join(okDir, "issue-tracker.yaml"), "-")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr %s", code, stderr)
	}
	var d deliveryOut
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if len(d.Activations) != 1 || len(d.Discarded) != 0 {
		t.Fatalf("delivery = %s, want one activation", stdout)
	}
	a := d.Activations[0]
	if want := `Issue #7 "Flaky test" was assigned to alice: https://github.com/o/r/issues/7`; a.Message != want {
		t.Errorf("message = %q, want %q", a.Message, want)
	}
	if a.DeliveryID != "d-7" {
		t.Errorf("delivery_id = %q, want d-7", a.DeliveryID)
	}
	if a.Parameters["assignee"] != "alice" || a.Parameters["repo_id"] != 4242.0 {
		t.Errorf("parameters = %v, want assignee alice and repo_id 4242", a.Parameters)
	}
	if a.Payload["action"] != "assigned" {
		t.Errorf("payload = %v, want the body", a.Payload)
	}
	if !strings.Contains(stdout, "\n  \"activations\": [") {
		t.Errorf("stdout is not indented:\n%s", stdout)
	}
}

func TestDeliverErrors(t *testing.T) {
	t.Parallel()
	manifest := filepath.Join(okDir, "issue-tracker.yaml")
	body := writeFile(t, "body.json", assignedBody)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"bad header flag", []string{"deliver", manifest, "issue_assigned", "--body", body, "--header", "X-Token"},
			exitUsage, "want name:value"},
		{"bad binding flag", []string{"deliver", manifest, "issue_assigned", "--body", body, "--binding", "repo_id"},
			exitUsage, "want name=value"},
		{"no body", []string{"deliver", manifest, "issue_assigned", "--binding", "repo_id=1"}, exitUsage, "--body is required"},
		{"no event", []string{"deliver", manifest, "--body", body}, exitUsage, "want a manifest file and an event name"},
		{"undeclared binding", []string{"deliver", manifest, "-", "--body", body, "--binding", "repo=1"},
			exitUsage, `--binding names "repo"`},
		{"unknown event", []string{"deliver", manifest, "nope", "--body", body, "--binding", "repo_id=1"},
			exitProblem, "unknown event"},
		{"missing required binding", []string{"deliver", manifest, "-", "--body", body}, exitProblem, "repo_id"},
		{"unreadable body", []string{"deliver", manifest, "-", "--body", body + ".missing", "--binding", "repo_id=1"},
			exitProblem, "body:"},
		{"missing manifest", []string{"deliver", manifest + ".missing", "-", "--body", body}, exitProblem, "cannot read the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runTool(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) || stdout != "" {
				t.Errorf("exit %d (want %d)\nstdout %s\nstderr %s (want %q)", code, tt.code, stdout, stderr, tt.stderr)
			}
		})
	}
}
