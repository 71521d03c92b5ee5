package openapi_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
)

// namesDoc has operationIds as GitHub writes them ("repos/get"), one with a space, one too long, two that clean
// to the same name, one that starts with a digit and one operation without an operationId.
const namesDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/repos/{owner}/{repo}":{"get":{"operationId":"repos/get","tags":["repos"],"parameters":[{"name":"owner","in":"path","required":true,"schema":{"type":"string"}},{"name":"repo","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/pets/{id}":{"get":{"operationId":"find pet by id","tags":["pets"],"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}},
  "delete":{"tags":["pets"],"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"204":{"description":"ok"}}}},
"/long":{"post":{"operationId":"PostV1BillingPortalConfigurationsConfigurationFeaturesSubscriptionUpdateProducts","responses":{"200":{"description":"ok"}}}},
"/a":{"get":{"operationId":"issues/list","tags":["issues"],"responses":{"200":{"description":"ok"}}}},
"/b":{"get":{"operationId":"issues_list","tags":["issues"],"responses":{"200":{"description":"ok"}}}},
"/c":{"get":{"operationId":"issues-list","tags":["issues"],"responses":{"200":{"description":"ok"}}}},
"/d":{"get":{"operationId":"2fa/enable","responses":{"200":{"description":"ok"}}}},
"/pulls":{"get":{"operationId":"pulls/list","tags":["pulls"],"responses":{"200":{"description":"ok"}}},"post":{"operationId":"pulls/create","tags":["pulls"],"responses":{"200":{"description":"ok"}}}}
}}`

func actionNames(tl *tool.Tool) []string {
	var out []string
	for _, f := range tl.Functions(tool.Capability{}) {
		out = append(out, f.Action)
	}
	return out
}

// TestNamesFromAnyOperationID: every operation becomes an action with a valid name by one rule, and names that
// come out alike are kept apart by a hash of the operationId, each rename a warning.
func TestNamesFromAnyOperationID(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, namesDoc, "", "")
	want := []string{
		"issues_list_0b699fb9", // /a: "issues/list", then sha256("issues/list")[:8]
		"issues_list",          // /b: its operationId verbatim keeps the name
		"issues_list_1692d854", // /c: "issues-list"
		"get_d",                // "2fa/enable" starts with a digit: method and path
		"PostV1BillingPortalConfigurationsConfigurationFeaturesS_5365a88d",
		"find_pet_by_id",
		"delete_pets_id",
		"pulls_list", "pulls_create",
		"repos_get",
	}
	if got := actionNames(tl); !reflect.DeepEqual(got, want) {
		t.Fatalf("actions\n%q\nwant\n%q", got, want)
	}
	for _, f := range tl.Functions(tool.Capability{}) {
		if len(f.Name) > 64 {
			t.Errorf("function name %q is %d characters", f.Name, len(f.Name))
		}
	}
	if s := tl.Skipped(); len(s) != 0 {
		t.Errorf("Skipped = %+v", s)
	}
	var renames []string
	for _, w := range tl.Warnings() {
		if w.Path == "openapi" {
			renames = append(renames, w.Detail)
		}
	}
	if len(renames) != 3 {
		t.Fatalf("warnings %q, want 3 renames (two ties, one shortened)", renames)
	}
	for _, part := range []string{`"issues/list" is named "issues_list_0b699fb9"`, `"issues-list" is named "issues_list_1692d854"`,
		`"PostV1BillingPortalConfigurationsConfigurationFeaturesSubscriptionUpdateProducts" is named`} {
		if !strings.Contains(strings.Join(renames, "\n"), part) {
			t.Errorf("no warning says %s: %q", part, renames)
		}
	}
	// The request goes where the operation says.
	res := invokeOnce(t, tl, "repos_get", map[string]any{"owner": "octo", "repo": "hello"})
	if res.IsError {
		t.Fatalf("repos_get: %+v", res.Error)
	}
	if got := srv.last(t).EscapedPath; got != "/v3/repos/octo/hello" {
		t.Errorf("path %q", got)
	}
}

// TestNamesDoNotShiftWhenTheDocumentGrows: a name depends on its operation, not on document order or on the
// operations added elsewhere.
func TestNamesDoNotShiftWhenTheDocumentGrows(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	before := actionNames(loadDoc(t, srv, namesDoc, "", ""))
	grown := strings.Replace(namesDoc, `"/pulls":`, `"/aaa":{"get":{"operationId":"aaa/new","responses":{"200":{"description":"ok"}}}},
"/zzz":{"get":{"operationId":"issues list","responses":{"200":{"description":"ok"}}}},
"/pulls":`, 1)
	after := map[string]bool{}
	for _, n := range actionNames(loadDoc(t, srv, grown, "", "")) {
		after[n] = true
	}
	for _, n := range before {
		if !after[n] {
			t.Errorf("action %q disappeared once the document grew", n)
		}
	}
}

// TestOperationIDVerbatim: operation_id takes the document's operationId as written, or the action name made
// from it.
func TestOperationIDVerbatim(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for _, id := range []string{`"repos/get"`, `repos_get`} {
		tl := loadDoc(t, srv, namesDoc, "", "actions:\n  - name: get_repo\n    description: Gets a repository.\n"+
			"    execute:\n      openapi: {operation_id: "+id+"}\n")
		res := invokeOnce(t, tl, "get_repo", map[string]any{"owner": "o", "repo": "r"})
		if res.IsError {
			t.Fatalf("%s: %+v", id, res.Error)
		}
		if got := srv.last(t).EscapedPath; got != "/v3/repos/o/r" {
			t.Errorf("%s: path %q", id, got)
		}
	}
	_, err := tool.Load(context.Background(), []byte(docManifest(t, srv, namesDoc, "",
		"actions:\n  - name: x\n    description: X.\n    execute:\n      openapi: {operation_id: \"repos/nope\"}\n")))
	if ps := problems(t, err); !hasProblem(ps, "actions[0].execute.openapi.operation_id", "invalid", "repos/nope") {
		t.Errorf("problems %+v", ps)
	}
}

// TestSelect: select chooses operations by tag, operationId pattern, path prefix and method; only those become
// actions, the rest is a count in the load fact, and an entry that selects nothing is a warning.
func TestSelect(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tests := []struct {
		name, sel string
		want      []string
	}{
		{"tags", "{tags: [pets]}", []string{"find_pet_by_id", "delete_pets_id"}},
		{"operation patterns", `{operations: ["pulls/*", "repos/get"]}`, []string{"pulls_list", "pulls_create", "repos_get"}},
		{"action-name pattern", `{operations: ["find_pet_*"]}`, []string{"find_pet_by_id"}},
		{"path prefix", `{paths: ["/pets"]}`, []string{"find_pet_by_id", "delete_pets_id"}},
		{"union, then methods", `{tags: [pulls, pets], methods: [post, DELETE]}`, []string{"delete_pets_id", "pulls_create"}},
		{"methods alone", `{methods: [DELETE]}`, []string{"delete_pets_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obs := &factLog{}
			src := docManifest(t, srv, namesDoc, "  select: "+tt.sel+"\n", "")
			tl, err := tool.Load(context.Background(), []byte(src), tool.WithObserver(obs))
			if err != nil {
				t.Fatal(err)
			}
			if got := actionNames(tl); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("actions %q, want %q", got, tt.want)
			}
			if s := tl.Skipped(); len(s) != 0 {
				t.Errorf("Skipped = %+v: what the selection leaves out is not skipped", s)
			}
			f := obs.named(facts.ActionsExpanded)
			if len(f) != 1 || f[0].Data["unselected"] != 10-len(tt.want) || f[0].Data["expanded"] != len(tt.want) {
				t.Errorf("facts %+v", f)
			}
		})
	}
	tl := loadDoc(t, srv, namesDoc, "  select: {tags: [pets, nothing], paths: [/nowhere]}\n", "")
	var got []string
	for _, w := range tl.Warnings() {
		got = append(got, w.Path)
	}
	if want := []string{"openapi.select.paths[0]", "openapi.select.tags[1]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("warnings at %q, want %q", got, want)
	}
	_, err := tool.Load(context.Background(), []byte(docManifest(t, srv, namesDoc,
		"  select: {operations: [\"*\"], paths: [repos], methods: [FETCH]}\n", "")))
	ps := problems(t, err)
	for p, typ := range map[string]string{"openapi.select.operations[0]": "invalid", "openapi.select.paths[0]": "invalid",
		"openapi.select.methods[0]": "unsupported"} {
		if !hasProblem(ps, p, typ, "") {
			t.Errorf("no problem at %s: %+v", p, ps)
		}
	}
}

// TestDuplicateOperationID: of two operations given the same operationId (invalid OpenAPI), the first in path
// order keeps the name and the other is told apart by a hash of its method and path, with a warning.
func TestDuplicateOperationID(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/a":{"get":{"operationId":"list","responses":{"200":{"description":"ok"}}}},
"/b":{"get":{"operationId":"list","responses":{"200":{"description":"ok"}}}}}}`
	tl := loadDoc(t, srv, doc, "", "")
	// list_ + the first 8 hex digits of sha256("GET /b")
	if got := actionNames(tl); !reflect.DeepEqual(got, []string{"list", "list_db789e7b"}) {
		t.Errorf("actions %q", got)
	}
	if w := tl.Warnings(); len(w) != 1 || !strings.Contains(w[0].Detail, `"list" is named "list_db789e7b"`) {
		t.Errorf("warnings %+v", w)
	}
}
