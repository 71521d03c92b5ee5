package tool_test

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// settingsManifest declares dotted settings (one secret), and settings with defaults.
var settingsManifest = manifestHeader("settings-tool") + `settings:
  properties:
    github.token:
      type: string
      format: password
      maxLength: 8
    github.owner:
      type: string
    region:
      type: string
      default: eu
    retries:
      type: integer
      default: 3
actions:
  - name: whoami
    description: Returns the login.
    execute:
      stateless_http:
        method: GET
        url: "https://api.github.com/users/{settings.github.owner}?region={settings.region}"
        headers:
          Authorization: "Bearer {settings.github.token}"
`

// secretValue is a setting value that must never appear in a problem.
const secretValue = "hunter2-very-secret-token"

func problemKeys(ps []tool.Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Type+" "+p.Path)
	}
	sort.Strings(out)
	return out
}

func TestWithSettingsValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings map[string]any
	}{
		{"required only, defaults back-fill the rest", map[string]any{"github.token": "t", "github.owner": "o"}},
		{"all given", map[string]any{"github.token": "t", "github.owner": "o", "region": "us", "retries": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := mustLoadSrc(t, settingsManifest, tool.WithSettings(tt.settings))
			if w := tl.Warnings(); len(w) != 0 {
				t.Errorf("want no warnings, got %v", w)
			}
		})
	}
}

func TestWithoutSettingsNothingIsChecked(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, settingsManifest)
	if w := tl.Warnings(); len(w) != 0 {
		t.Errorf("want no warnings, got %v", w)
	}
}

// TestWithSettingsProblems checks the paths and types of settings problems. A dotted key is rendered the way
// field.Path.Key renders it: settings["github.token"].
func TestWithSettingsProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings map[string]any
		want     []string // "type path", sorted
	}{
		{"missing secret", map[string]any{"github.owner": "o"},
			[]string{`required settings["github.token"]`}},
		{"missing both dotted keys, each named", map[string]any{},
			[]string{`required settings["github.owner"]`, `required settings["github.token"]`}},
		{"nil map is no settings at all", nil,
			[]string{`required settings["github.owner"]`, `required settings["github.token"]`}},
		{"undeclared key", map[string]any{"github.token": "t", "github.owner": "o", "extra": 1},
			[]string{`unsupported settings.extra`}},
		{"undeclared dotted key", map[string]any{"github.token": "t", "github.owner": "o", "github.tokn": "x"},
			[]string{`unsupported settings["github.tokn"]`}},
		{"wrong type", map[string]any{"github.token": "t", "github.owner": "o", "retries": "three"},
			[]string{`invalid settings.retries`}},
		{"wrong type of a dotted key", map[string]any{"github.token": "t", "github.owner": 42},
			[]string{`invalid settings["github.owner"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			verr := mustFailSrc(t, settingsManifest, tool.WithSettings(tt.settings))
			if got := problemKeys(verr.Problems); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems = %q, want %q\n%v", got, tt.want, verr)
			}
		})
	}
}

// TestWithSettingsProblemPaths checks only the paths (not the types) of missing dotted settings, so a failure
// here isolates the path rendering.
func TestWithSettingsProblemPaths(t *testing.T) {
	t.Parallel()
	verr := mustFailSrc(t, settingsManifest, tool.WithSettings(map[string]any{}))
	var paths []string
	for _, p := range verr.Problems {
		paths = append(paths, p.Path)
	}
	want := []string{`settings["github.owner"]`, `settings["github.token"]`}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
}

// TestWithSettingsSecretNeverShown checks SPEC §3.2: the value of a format: password setting appears in no
// problem, whatever is wrong with it.
func TestWithSettingsSecretNeverShown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret any
		shown  string
	}{
		{"too long", secretValue, secretValue},
		{"wrong type", 987654321987, "987654321987"},
		{"wrong type, object", map[string]any{"inner": secretValue}, secretValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			verr := mustFailSrc(t, settingsManifest, tool.WithSettings(map[string]any{
				"github.token": tt.secret, "github.owner": "o"}))
			if len(verr.Problems) == 0 {
				t.Fatal("want a problem for the secret setting")
			}
			if strings.Contains(verr.Error(), tt.shown) {
				t.Errorf("the secret value appears in the error:\n%v", verr)
			}
			for _, p := range verr.Problems {
				if strings.Contains(p.Detail, tt.shown) || strings.Contains(p.String(), tt.shown) {
					t.Errorf("the secret value appears in problem %s", p)
				}
				if p.Type != "invalid" {
					t.Errorf("problem %s: type %q, want invalid", p, p.Type)
				}
			}
		})
	}
}

// TestWithSettingsSecretPath checks that a bad secret is reported at its own (dotted) key.
func TestWithSettingsSecretPath(t *testing.T) {
	t.Parallel()
	verr := mustFailSrc(t, settingsManifest, tool.WithSettings(map[string]any{
		"github.token": secretValue, "github.owner": "o"}))
	assertProblem(t, verr, `settings["github.token"]`, "invalid")
}

func TestSettingsSchemaDeclaresEveryReference(t *testing.T) {
	t.Parallel()
	src := strings.Replace(settingsManifest, "{settings.region}", "{settings.regoin}", 1)
	assertProblem(t, loadErr(src), "actions[0].execute.stateless_http.url", "invalid")
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	session := manifestHeader("browser") + `stateful_session:
  create:
    method: POST
    url: "https://browser.example.com/sessions"
  extract:
    id: "$.id"
  teardown:
    method: DELETE
    url: "https://browser.example.com/sessions/{session.id}"
actions:
  - name: open
    description: Opens a page.
    parameters:
      properties:
        url: { type: string }
    execute:
      stateful_session:
        execute:
          method: POST
          url: "https://browser.example.com/sessions/{session.id}/open"
          body:
            url: "{parameters.url}"
  - name: text
    description: Reads the page.
    execute:
      stateful_session:
        execute:
          method: GET
          url: "https://browser.example.com/sessions/{session.id}/text"
`
	subscription := manifestHeader("drive") + `actions:
` + celAction("noop", "") + `events:
  - name: edit
    description: An edit.
    message: "edited: {event.payload.id}"
    receive:
      subscription:
        subscribe:
          method: POST
          url: "https://example.com/watch"
          json:
            id: "{subscription.id}"
`
	auth := manifestHeader("gh") + `actions:
  - name: me
    description: Who am I.
    execute:
      stateless_http:
        method: GET
        url: "https://api.github.com/user"
        headers:
          Authorization: "Bearer {auth.github}"
`
	noSettingsSchema := manifestHeader("gh") + `actions:
  - name: me
    description: Who am I.
    execute:
      stateless_http:
        method: GET
        url: "https://api.github.com/user"
        headers:
          Authorization: "Bearer {settings.token}"
`
	tests := []struct {
		name     string
		manifest string
		opts     []tool.Option
		want     []string // warning paths, sorted
	}{
		{"teardown alias", session, nil, []string{"stateful_session.teardown"}},
		{"subscription json alias", subscription, nil, []string{"events[0].receive.subscription.subscribe.json"}},
		{"auth without call", auth, nil, []string{`actions[0].execute.stateless_http.headers.Authorization`}},
		{"settings without a schema", noSettingsSchema, nil,
			[]string{"actions[0].execute.stateless_http.headers.Authorization"}},
		{"settings without a schema, given", noSettingsSchema,
			[]tool.Option{tool.WithSettings(map[string]any{"token": "t"})},
			[]string{"actions[0].execute.stateless_http.headers.Authorization"}},
		{"nothing to warn about", manifestHeader("plain") + "actions:\n" + celAction("a", ""), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := mustLoadSrc(t, tt.manifest, tt.opts...)
			ws := tl.Warnings()
			var got []string
			for _, w := range ws {
				got = append(got, w.Path)
				if w.Type == "" || w.Detail == "" {
					t.Errorf("warning without type or detail: %+v", w)
				}
				if w.Line == 0 {
					t.Errorf("warning without a line: %+v", w)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("warnings = %q, want %q\n%v", got, tt.want, ws)
			}
			if len(ws) > 0 {
				ws[0].Path = "changed"
				if tl.Warnings()[0].Path == "changed" {
					t.Error("Warnings returns the tool's own slice")
				}
			}
		})
	}
}

func TestWarningsGithubPR(t *testing.T) {
	t.Parallel()
	tl, err := tool.LoadFile(context.Background(), "testdata/ok/github-pr.yaml")
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	want := map[string]int{
		"events[0].receive.webhook.secret": 50,
		"events[1].receive.webhook.secret": 67,
	}
	ws := tl.Warnings()
	if len(ws) != len(want) {
		t.Fatalf("want %d warnings, got %v", len(want), ws)
	}
	for _, w := range ws {
		line, ok := want[w.Path]
		if !ok {
			t.Errorf("unexpected warning %s", w)
			continue
		}
		if w.Line != line {
			t.Errorf("%s: line %d, want %d", w.Path, w.Line, line)
		}
		if !strings.Contains(w.Detail, "github_webhook_secret") {
			t.Errorf("%s: detail does not name the setting: %q", w.Path, w.Detail)
		}
	}
}

func TestAliasConflictsAreErrors(t *testing.T) {
	t.Parallel()
	session := manifestHeader("browser") + `actions:
  - name: open
    description: Opens a page.
    execute:
      stateful_session:
        create:
          method: POST
          url: "https://browser.example.com/sessions"
        extract:
          id: "$.id"
        execute:
          method: GET
          url: "https://browser.example.com/sessions/{session.id}"
        destroy:
          method: DELETE
          url: "https://browser.example.com/sessions/{session.id}"
        teardown:
          method: DELETE
          url: "https://browser.example.com/sessions/{session.id}"
`
	subscription := manifestHeader("drive") + "actions:\n" + celAction("noop", "") + `events:
  - name: edit
    description: An edit.
    message: "edited"
    receive:
      subscription:
        subscribe:
          method: POST
          url: "https://example.com/watch"
          json: { id: "1" }
          body: { id: "1" }
`
	tests := []struct{ name, manifest, path string }{
		{"destroy and teardown", session, "actions[0].execute.stateful_session.teardown"},
		{"body and json", subscription, "events[0].receive.subscription.subscribe.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assertProblem(t, loadErr(tt.manifest), tt.path, "duplicate")
		})
	}
}

// TestWithSettingsMissingIsRequired isolates the problem type of a missing setting from the rendering of dotted
// keys: a missing plain key is a "required" problem at settings.<key>.
func TestWithSettingsMissingIsRequired(t *testing.T) {
	t.Parallel()
	src := manifestHeader("plain-settings") + `settings:
  properties:
    api_key: { type: string, format: password }
    base_url: { type: string, default: "https://example.com" }
actions:
  - name: get
    description: Gets.
    execute:
      stateless_http:
        method: GET
        url: "{settings.base_url}/items"
        headers:
          Authorization: "Bearer {settings.api_key}"
`
	verr := mustFailSrc(t, src, tool.WithSettings(map[string]any{}))
	if len(verr.Problems) != 1 || verr.Problems[0].Path != "settings.api_key" {
		t.Fatalf("want one problem at settings.api_key, got\n%v", verr)
	}
	if got := verr.Problems[0].Type; got != "required" {
		t.Errorf("missing setting: type %q, want required", got)
	}
	mustLoadSrc(t, src, tool.WithSettings(map[string]any{"api_key": "k"}))
}

// TestSettingsExplicitRequired checks SPEC §3.1 for settings: an explicit required array decides which settings
// are missing.
func TestSettingsExplicitRequired(t *testing.T) {
	t.Parallel()
	src := manifestHeader("explicit-settings") + `settings:
  required: [api_key]
  properties:
    api_key: { type: string }
    endpoint: { type: string }
actions:
  - name: get
    description: Gets.
    execute:
      stateless_http:
        method: GET
        url: "https://example.com/{settings.endpoint}"
        headers:
          Authorization: "Bearer {settings.api_key}"
`
	verr := mustFailSrc(t, src, tool.WithSettings(map[string]any{}))
	var paths []string
	for _, p := range verr.Problems {
		paths = append(paths, p.Path)
	}
	if !reflect.DeepEqual(paths, []string{"settings.api_key"}) {
		t.Errorf("problems at %q, want only settings.api_key\n%v", paths, verr)
	}
	mustLoadSrc(t, src, tool.WithSettings(map[string]any{"api_key": "k"}))
}
