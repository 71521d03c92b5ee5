package openapi_test

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// realManifest expands a selection of a real description against srv.
func realManifest(t *testing.T, srv *server, name, sel string) *tool.Tool {
	t.Helper()
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		realDoc(t, name) + "\n  base_url: " + srv.URL + "/v3\n  headers:\n    Authorization: Bearer t0ken\n  select: " + sel + "\n"
	tl, err := tool.Load(context.Background(), []byte(m), tool.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestRealRequests sends requests built from real descriptions to a recording server: GitHub's path escaping and
// JSON body, Stripe's form body and deepObject query, Twilio's form body and operator-suffixed filters, and the
// OAI example whose operationId has spaces.
func TestRealRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	type check struct {
		doc, sel, action string
		args             map[string]any
		method, path     string
		query            url.Values
		contentType      string
		body             string // JSON text, or form values encoded
	}
	const sid = "AC0123456789abcdef0123456789abcdef"
	checks := []check{
		{doc: "github-api.github.com.json.gz", sel: `{operations: ["issues/create", "issues/list-for-repo"]}`,
			action: "issues_create", args: map[string]any{"owner": "octo cat", "repo": "a/b", "body": map[string]any{"title": "Bug", "labels": []any{"x"}}},
			method: "POST", path: "/v3/repos/octo%20cat/a%2Fb/issues", contentType: "application/json",
			body: `{"labels":["x"],"title":"Bug"}`},
		{doc: "github-api.github.com.json.gz", sel: `{operations: ["issues/*"], methods: [GET], paths: ["/repos/{owner}/{repo}/issues"]}`,
			action: "issues_list_for_repo", args: map[string]any{"owner": "o", "repo": "r", "labels": "bug,ui", "state": "open", "per_page": 5},
			// The document's defaults (direction, page, sort) are the server's: left out, they are not sent (SPEC §7.5).
			method: "GET", path: "/v3/repos/o/r/issues", query: url.Values{"labels": {"bug,ui"}, "state": {"open"}, "per_page": {"5"}}},
		{doc: "github-api.github.com.json.gz", sel: `{operations: ["repos/upload-release-asset"]}`,
			action: "repos_upload_release_asset", args: map[string]any{"owner": "o", "repo": "r", "release_id": 7, "name": "a.bin",
				"body": "AAEC/w==", "body_encoding": "base64"},
			method: "POST", path: "/v3/repos/o/r/releases/7/assets", query: url.Values{"name": {"a.bin"}},
			contentType: "application/octet-stream", body: "\x00\x01\x02\xff"},
		{doc: "stripe-2024-04-10.json.gz", sel: `{operations: [PostCustomers]}`,
			action: "PostCustomers", args: map[string]any{"body": map[string]any{"email": "a@b.co", "metadata": map[string]any{"order": "6735"},
				"expand": []any{"sources"}}},
			method: "POST", path: "/v3/v1/customers", contentType: "application/x-www-form-urlencoded",
			body: "email=a%40b.co&expand%5B%5D=sources&metadata%5Border%5D=6735"},
		{doc: "stripe-2024-04-10.json.gz", sel: `{paths: [/v1/customers], methods: [GET]}`,
			action: "GetCustomers", args: map[string]any{"created": map[string]any{"gte": 1700000000}, "expand": []any{"data.sources"}, "limit": 3},
			method: "GET", path: "/v3/v1/customers",
			query: url.Values{"created[gte]": {"1700000000"}, "expand[]": {"data.sources"}, "limit": {"3"}}},
		{doc: "stripe-2024-04-10.json.gz", sel: `{paths: [/v1/customers], methods: [GET]}`,
			action: "GetCustomers", args: map[string]any{"created": 1700000000},
			method: "GET", path: "/v3/v1/customers", query: url.Values{"created": {"1700000000"}}},
		{doc: "twilio-api-v2010.json.gz", sel: `{operations: [CreateMessage, ListCall]}`,
			action: "CreateMessage", args: map[string]any{"AccountSid": sid, "body": map[string]any{"To": "+15550001", "From": "+15550002", "Body": "hi & bye"}},
			method: "POST", path: "/v3/2010-04-01/Accounts/" + sid + "/Messages.json", contentType: "application/x-www-form-urlencoded",
			body: "Body=hi+%26+bye&From=%2B15550002&To=%2B15550001"},
		{doc: "twilio-api-v2010.json.gz", sel: `{operations: [CreateMessage, ListCall]}`,
			action: "ListCall", args: map[string]any{"AccountSid": sid, "StartTime_gt": "2024-01-01T00:00:00Z", "PageSize": 20},
			method: "GET", path: "/v3/2010-04-01/Accounts/" + sid + "/Calls.json", query: url.Values{"StartTime>": {"2024-01-01T00:00:00Z"}, "PageSize": {"20"}}},
		{doc: "oai-petstore-expanded.yaml", sel: `{tags: [], methods: [GET]}`,
			action: "find_pet_by_id", args: map[string]any{"id": 42}, method: "GET", path: "/v3/pets/42"},
	}
	for _, c := range checks {
		if testing.Short() && strings.HasPrefix(c.doc, "github") {
			continue // GitHub's description takes seconds to parse
		}
		tl := realManifest(t, srv, c.doc, c.sel)
		res := invokeOnce(t, tl, c.action, c.args)
		if res.IsError {
			t.Errorf("%s: %+v", c.action, res.Error)
			continue
		}
		r := srv.last(t)
		if r.Method != c.method || r.EscapedPath != c.path {
			t.Errorf("%s: %s %s, want %s %s", c.action, r.Method, r.EscapedPath, c.method, c.path)
		}
		if got, _ := url.ParseQuery(r.RawQuery); len(c.query) > 0 && !reflect.DeepEqual(got, c.query) || len(c.query) == 0 && r.RawQuery != "" {
			t.Errorf("%s: query %v, want %v", c.action, got, c.query)
		}
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			t.Errorf("%s: Authorization %q", c.action, r.Header.Get("Authorization"))
		}
		if c.contentType != "" && r.Header.Get("Content-Type") != c.contentType || string(r.Body) != c.body {
			t.Errorf("%s: %s body %s, want %s %s", c.action, r.Header.Get("Content-Type"), r.Body, c.contentType, c.body)
		}
		for _, f := range tl.Functions(tool.Capability{}) {
			if strings.Contains(string(f.Parameters), "$ref") {
				t.Errorf("%s: a $ref left in %s", c.action, f.Name)
			}
		}
	}
}
