package tool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

const edgeHeader = "kind: commonagents.info/v1beta2/tool\nnamespace: t\nname: edge\ndescription: d\n"

func TestLoadEdgeCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, manifest, path, typ string
	}{
		{"flow-style YAML 1.1 boolean key", edgeHeader + `parameters: {properties: {y: {type: string}}}
actions: [{name: a, description: d, execute: {cel: {expression: "1"}}}]
`, "parameters.properties.y", "invalid"},
		{"message names an undeclared extraction", edgeHeader + `events:
  - name: e
    message: "{event.nope}"
    receive: {webhook: {parameters: {author: "event.payload.user"}}}
`, "events[0].message", "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tool.Load(context.Background(), []byte(tc.manifest))
			assertProblem(t, err, tc.path, tc.typ)
		})
	}
}

func TestLoadMessageExtractionsResolve(t *testing.T) {
	t.Parallel()
	_, err := tool.Load(context.Background(), []byte(edgeHeader+`events:
  - name: e
    message: "{event.author} on {event.name}: {event.payload.text} ({event.headers.x-id})"
    receive: {webhook: {parameters: {author: "event.payload.user"}}}
`))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
}

func TestSecretSettingObjectKeyNotShown(t *testing.T) {
	t.Parallel()
	manifest := edgeHeader + `settings:
  properties:
    creds: {type: object, format: password, additionalProperties: false, properties: {a: {type: string}}}
actions: [{name: a, description: d, execute: {cel: {expression: "1"}}}]
`
	_, err := tool.Load(context.Background(), []byte(manifest),
		tool.WithSettings(map[string]any{"creds": map[string]any{"SEKRETKEY-abc123": "v"}}))
	assertProblem(t, err, "settings.creds", "invalid")
	if strings.Contains(err.Error(), "SEKRETKEY") {
		t.Errorf("error shows part of a secret setting: %v", err)
	}
}

func TestUnusedSharedBlocksAreValidated(t *testing.T) {
	t.Parallel()
	manifest := edgeHeader + `stateless_http: {bogus: 1, base_url: "ftp://x"}
stateful_session: {nope: 2}
exec: 7
actions: [{name: a, description: d, execute: {cel: {expression: "1"}}}]
`
	_, err := tool.Load(context.Background(), []byte(manifest))
	for _, want := range [][2]string{
		{"stateless_http.bogus", "unsupported"}, {"stateless_http.base_url", "invalid"},
		{"stateful_session.nope", "unsupported"}, {"exec", "invalid"},
	} {
		assertProblem(t, err, want[0], want[1])
	}
}
