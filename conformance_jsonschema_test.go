package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

type schemaGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// TestJSONSchemaTestSuiteDraft7 runs the required draft-07 files of the JSON-Schema-Test-Suite through the public
// API: each group's schema becomes the schema of one action parameter x (its local "#" pointers rewritten to point
// inside x), and each case's data is the argument {"x": data} of an Invoke. A valid case must run, an invalid one
// must be refused as invalid_arguments. Schemas SPEC §2 refuses (a $ref not starting with "#") must be refused by
// Load; their cases are counted apart, outside the denominator. Known deviations are listed in
// schemaSuiteDeviations; each must still deviate, so the list cannot go stale.
func TestJSONSchemaTestSuiteDraft7(t *testing.T) {
	t.Parallel()
	var files map[string][]schemaGroup
	readGzipJSON(t, "json-schema-draft7.json.gz", &files)
	var right, total, refusedCases int
	var validRejected []string
	deviating := map[string]bool{}
	for _, file := range slices.Sorted(mapKeys(files)) {
		for _, g := range files[file] {
			src, refs := schemaManifest(t, g.Schema)
			tl, err := tool.Load(context.Background(), src)
			if refs {
				var verr *tool.ValidationError
				if !errors.As(err, &verr) {
					t.Errorf("%s / %s: Load = %v, want a remote $ref refused", file, g.Description, err)
				}
				refusedCases += len(g.Tests)
				continue
			}
			if err != nil {
				t.Errorf("%s / %s: Load: %v", file, g.Description, err)
				total += len(g.Tests)
				for _, c := range g.Tests {
					if c.Valid {
						validRejected = append(validRejected, file+" / "+g.Description+" / "+c.Description)
					}
				}
				continue
			}
			task := newTask(t, tl, tool.TaskConfig{})
			for _, c := range g.Tests {
				total++
				name := file + " / " + g.Description + " / " + c.Description
				var arg any
				if err := json.Unmarshal(c.Data, &arg); err != nil {
					t.Fatal(err)
				}
				res, err := task.Invoke(context.Background(), "check", map[string]any{"x": arg})
				if err != nil {
					t.Fatalf("%s: Invoke: %v", name, err)
				}
				accepted := !res.IsError
				if !accepted && res.Error.Kind != runtime.KindInvalidArguments && res.Error.Kind != runtime.KindMissingFields {
					t.Errorf("%s: %v, want a run or invalid_arguments", name, res.Error)
				}
				if accepted == c.Valid {
					right++
					if schemaSuiteDeviations[name] {
						t.Errorf("%s: listed as a deviation but now right: remove it from the list", name)
					}
					continue
				}
				if c.Valid {
					validRejected = append(validRejected, name)
				}
				if !schemaSuiteDeviations[name] {
					t.Errorf("%s: valid = %v, accepted = %v (%v)", name, c.Valid, accepted, res.Error)
				}
				deviating[name] = true
			}
		}
	}
	for name := range schemaSuiteDeviations {
		if !deviating[name] {
			t.Errorf("deviation %q did not occur", name)
		}
	}
	if len(validRejected) > 0 {
		t.Errorf("%d valid arguments rejected: %s", len(validRejected), strings.Join(validRejected, "; "))
	}
	rate := float64(right) / float64(total)
	t.Logf("draft-07 required: %d of %d right (%.2f %%); %d cases left out (remote $ref, refused by SPEC §2)",
		right, total, 100*rate, refusedCases)
	if rate < 0.995 {
		t.Errorf("pass rate %.2f %% below 99.5 %%", 100*rate)
	}
}

// schemaSuiteDeviations are the cases the library gets wrong, by "file / group / case" (docs/schemas.md). None
// rejects a valid argument.
var schemaSuiteDeviations = map[string]bool{}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// schemaManifest is a manifest whose action "check" has one parameter x with schema s, its "#" pointers rewritten
// to point inside x; refs reports a $ref that does not start with "#".
func schemaManifest(t *testing.T, s json.RawMessage) (src []byte, refs bool) {
	var schema any
	if err := json.Unmarshal(s, &schema); err != nil {
		t.Fatal(err)
	}
	schema = rewriteRefs(schema, "#/properties/x", &refs)
	m, err := json.Marshal(map[string]any{"kind": "commonagents.info/v1beta2/tool", "namespace": "tests",
		"name": "schema-suite", "description": "A JSON-Schema-Test-Suite case.",
		"actions": []any{map[string]any{"name": "check", "description": "Checks x.",
			"parameters": map[string]any{"properties": map[string]any{"x": schema}},
			"execute":    map[string]any{"cel": map[string]any{"expression": "true"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return yamlSafe(m), refs
}

// rewriteRefs points every "#" and "#/..." $ref inside the schema at prefix (a JSON pointer fragment, "#/..."); a
// $ref that does not start with "#" sets *remote. Only values in schema positions
// hold $ref strings in the suite; an object that merely has a "$ref" property under properties is also an object
// keyed "$ref", whose value is a schema, not a string, and is left alone.
func rewriteRefs(v any, prefix string, remote *bool) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				switch {
				case s == "#" || strings.HasPrefix(s, "#/"):
					out[k] = prefix + strings.TrimPrefix(s, "#")
				case strings.HasPrefix(s, "#"): // "#name" is a location-independent anchor: it needs no rewriting
					out[k] = s
				default:
					*remote = true
					out[k] = s
				}
				continue
			}
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				out[k] = e // data, not schemas
				continue
			}
			out[k] = rewriteRefs(e, prefix, remote)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = rewriteRefs(e, prefix, remote)
		}
		return out
	}
	return v
}
