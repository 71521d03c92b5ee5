package httpspec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

func TestBuildSendsWhatTheTemplateSays(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, jsonReply(`{}`))
	values := roots{
		"settings":   map[string]any{"base": srv.URL + "/api", "token": "tkn"},
		"parameters": map[string]any{"id": "a b", "q": "x&y", "count": json.Number("12"), "on": true, "tags": []any{"a", "b"}},
	}
	tests := []struct {
		name        string
		c           *Compiled
		wantMethod  string
		wantPath    string
		wantQuery   string
		wantHeaders map[string]string // "" means absent
		wantBody    any               // nil means no body
	}{
		{
			name: "post with typed body",
			c: compiled(t, "POST", "{settings.base}/items/{parameters.id}?q={parameters.q}&limit=5",
				map[string]string{"Authorization": "Bearer {settings.token}", "x-trace": "t-{parameters.count}"},
				map[string]any{"count": "{parameters.count}", "on": "{parameters.on}", "tags": "{parameters.tags}",
					"label": "n={parameters.count}", "nested": map[string]any{"id": "{parameters.id}"}}),
			wantMethod: "POST", wantPath: "/api/items/a%20b", wantQuery: "q=x%26y&limit=5",
			wantHeaders: map[string]string{"Authorization": "Bearer tkn", "X-Trace": "t-12", "Content-Type": "application/json"},
			wantBody: map[string]any{"count": json.Number("12"), "on": true, "tags": []any{"a", "b"}, "label": "n=12",
				"nested": map[string]any{"id": "a b"}},
		},
		{
			name:       "content type from a header wins",
			c:          compiled(t, "PUT", srv.URL+"/x", map[string]string{"content-type": "application/merge-patch+json"}, map[string]any{"a": "1"}),
			wantMethod: "PUT", wantPath: "/x",
			wantHeaders: map[string]string{"Content-Type": "application/merge-patch+json"},
			wantBody:    map[string]any{"a": "1"},
		},
		{
			name:       "get sends no body",
			c:          compiled(t, "GET", srv.URL+"/x?absent={parameters.missing}&keep=1", nil, map[string]any{"a": "1"}),
			wantMethod: "GET", wantPath: "/x", wantQuery: "keep=1",
			wantHeaders: map[string]string{"Content-Type": ""},
		},
		{
			name:       "delete carries a body",
			c:          compiled(t, "DELETE", srv.URL+"/x", nil, map[string]any{"ids": "{parameters.tags}"}),
			wantMethod: "DELETE", wantPath: "/x",
			wantHeaders: map[string]string{"Content-Type": "application/json"},
			wantBody:    map[string]any{"ids": []any{"a", "b"}},
		},
		{
			name:       "html characters are not escaped",
			c:          compiled(t, "POST", srv.URL+"/x", nil, map[string]any{"q": "<{parameters.q}>"}),
			wantMethod: "POST", wantPath: "/x",
			wantBody: map[string]any{"q": "<x&y>"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := tc.c.Build(context.Background(), values)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			before := len(srv.All())
			if _, err := Do(context.Background(), srv.Client(), req, 0); err != nil {
				t.Fatalf("Do: %v", err)
			}
			got := srv.All()[before:]
			if len(got) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(got))
			}
			r := got[0]
			if r.Method != tc.wantMethod || r.EscapedPath != tc.wantPath || r.RawQuery != tc.wantQuery {
				t.Errorf("request = %s %s ? %s, want %s %s ? %s", r.Method, r.EscapedPath, r.RawQuery,
					tc.wantMethod, tc.wantPath, tc.wantQuery)
			}
			for k, want := range tc.wantHeaders {
				if got := r.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if tc.wantBody == nil {
				if len(r.Body) != 0 {
					t.Errorf("body = %q, want none", r.Body)
				}
				return
			}
			if got := decodeJSON(t, r.Body); !reflect.DeepEqual(got, tc.wantBody) {
				t.Errorf("body = %s, want %v", r.Body, tc.wantBody)
			}
			if tc.name == "html characters are not escaped" && !strings.Contains(string(r.Body), "<x&y>") {
				t.Errorf("body %s was HTML-escaped", r.Body)
			}
		})
	}
}

// TestBuildInjection feeds hostile values into every part of a request: none may change the host, add a dot
// segment, add query keys, add headers or change the body's JSON structure (SPEC §12.1).
func TestBuildInjection(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, jsonReply(`{}`))
	host := strings.TrimPrefix(srv.URL, "http://")
	c := compiled(t, "POST", srv.URL+"/v1/files/{parameters.path}/raw?ref={parameters.ref}&fixed=1",
		map[string]string{"X-Note": "{parameters.note}"},
		map[string]any{"name": "{parameters.name}", "role": "user"})
	base := map[string]any{"path": "p", "ref": "r", "note": "n", "name": "x"}
	tests := []struct {
		name    string
		param   string
		value   string
		wantErr bool // a recoverable invalid_arguments error and nothing sent
		segs    int  // path segments between /v1/files/ and /raw when sent
	}{
		{"dotdot", "path", "..", true, 0},
		{"dotdot slash", "path", "../../admin", true, 0},
		{"dot", "path", "a/./b", true, 0},
		{"encoded dotdot stays literal", "path", "%2e%2e", false, 1},
		{"question mark in path", "path", "a?admin=1", false, 1},
		{"fragment in path", "path", "a#frag", false, 1},
		{"userinfo in path", "path", "@evil.com", false, 1},
		{"absolute url in path", "path", "http:x", false, 1},
		{"slash splits segments", "path", "a/b", false, 2},
		{"backslash", "path", `..\..\x`, false, 1},
		{"query ampersand", "ref", "x&admin=true", false, 1},
		{"query fragment", "ref", "x#y", false, 1},
		{"query equals", "ref", "a=b=c", false, 1},
		{"header CRLF", "note", "a\r\nX-Admin: 1", true, 0},
		{"header LF", "note", "a\nX-Admin: 1", true, 0},
		{"header NUL", "note", "a\x00b", true, 0},
		{"header other control", "note", "a\x1bb", true, 0},
		{"header tab is fine", "note", "a\tb", false, 1},
		{"body quotes", "name", `x", "role": "admin`, false, 1},
		{"body braces", "name", `"}, {"role": "admin"}`, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{}
			for k, v := range base {
				vals[k] = v
			}
			vals[tc.param] = tc.value
			before := len(srv.All())
			req, err := c.Build(context.Background(), roots{"parameters": vals})
			if tc.wantErr {
				var rerr *runtime.Error
				if !errors.As(err, &rerr) || rerr.Kind != runtime.KindInvalidArguments || errors.Is(err, runtime.ErrUnrecoverable) {
					t.Fatalf("Build err = %v, want recoverable invalid_arguments", err)
				}
				if len(tc.value) > 2 && strings.Contains(err.Error(), tc.value) {
					t.Errorf("error %q carries the value", err)
				}
				if len(srv.All()) != before {
					t.Error("a request was sent")
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if _, err := Do(context.Background(), srv.Client(), req, 0); err != nil {
				t.Fatalf("Do: %v", err)
			}
			r := srv.All()[before]
			if r.Host != host {
				t.Errorf("host = %q, want %q", r.Host, host)
			}
			mid, ok := strings.CutPrefix(r.EscapedPath, "/v1/files/")
			mid, ok2 := strings.CutSuffix(mid, "/raw")
			if !ok || !ok2 {
				t.Fatalf("path %q lost its literal parts", r.EscapedPath)
			}
			pieces := strings.Split(mid, "/")
			if len(pieces) != tc.segs {
				t.Errorf("path %q has %d value segments, want %d", r.EscapedPath, len(pieces), tc.segs)
			}
			for _, p := range pieces {
				if dec, _ := url.PathUnescape(p); dec == "." || dec == ".." {
					t.Errorf("path %q has a dot segment", r.EscapedPath)
				}
			}
			if tc.param == "path" && tc.segs == 1 {
				if dec, _ := url.PathUnescape(mid); dec != tc.value {
					t.Errorf("path value arrived as %q, want %q", dec, tc.value)
				}
			}
			if keys := slices.Sorted(maps.Keys(r.Query)); !reflect.DeepEqual(keys, []string{"fixed", "ref"}) {
				t.Errorf("query keys = %v, want [fixed ref]", keys)
			}
			if got := r.Query.Get("ref"); got != vals["ref"] {
				t.Errorf("ref = %q, want %q", got, vals["ref"])
			}
			if r.Header.Get("X-Admin") != "" || r.Header.Get("X-Note") != vals["note"] {
				t.Errorf("headers = %v", r.Header)
			}
			want := map[string]any{"name": vals["name"], "role": "user"}
			if got := decodeJSON(t, r.Body); !reflect.DeepEqual(got, want) {
				t.Errorf("body = %s, want %v", r.Body, want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	missing := runtime.Errorf(runtime.KindMissingFields, "no token for github")
	failing := func(err error) interp.Resolver {
		return interp.ResolverFunc(func(ref interp.Ref) (any, error) {
			if ref.Root == interp.RootAuth {
				return nil, err
			}
			return "https://api.example.com", nil
		})
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name        string
		c           *Compiled
		values      interp.Resolver
		ctx         context.Context
		kind        string // recoverable kind, or "" for unrecoverable, or "cancelled"
		wantInError string
	}{
		{"recoverable resolver error keeps its kind and gains the token",
			compiled(t, "GET", "https://api.example.com/x", map[string]string{"Authorization": "Bearer {auth.github()}"}, nil),
			failing(missing), context.Background(), runtime.KindMissingFields, "{auth.github()}: no token for github"},
		{"other resolver error is unrecoverable",
			compiled(t, "POST", "https://api.example.com/x", nil, map[string]any{"t": "{auth.github()}"}),
			failing(errors.New("provider down")), context.Background(), "", "provider down"},
		{"prefix that is not a URL is a configuration error",
			compiled(t, "GET", "{settings.base}/x", nil, nil),
			roots{"settings": map[string]any{"base": "ftp://files.example.com"}}, context.Background(), "", "settings.base"},
		{"unsafe path value",
			compiled(t, "GET", "https://api.example.com/{parameters.p}", nil, nil),
			roots{"parameters": map[string]any{"p": ".."}}, context.Background(), runtime.KindInvalidArguments, "parameters.p"},
		{"resolver failing on a done context",
			compiled(t, "GET", "https://api.example.com/x", map[string]string{"A": "{auth.github()}"}, nil),
			failing(context.Canceled), cancelled, "cancelled", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.Build(tc.ctx, tc.values)
			if err == nil {
				t.Fatal("Build succeeded")
			}
			rerr := Recoverable(err)
			switch tc.kind {
			case "":
				if !errors.Is(err, runtime.ErrUnrecoverable) {
					t.Errorf("err = %v, want unrecoverable", err)
				}
			case "cancelled":
				if !errors.Is(err, context.Canceled) || rerr != nil || errors.Is(err, runtime.ErrUnrecoverable) {
					t.Errorf("err = %v, want a plain cancellation", err)
				}
			default:
				if rerr == nil || rerr.Kind != tc.kind {
					t.Errorf("err = %v, want recoverable %s", err, tc.kind)
				}
			}
			if !strings.Contains(err.Error(), tc.wantInError) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantInError)
			}
		})
	}
}

func TestBuildHeadersAllSet(t *testing.T) {
	t.Parallel()
	h := map[string]string{}
	want := http.Header{}
	for i := range 20 {
		name := fmt.Sprintf("x-h%02d", i)
		h[name] = fmt.Sprintf("v%d-{parameters.n}", i)
		want.Set(name, fmt.Sprintf("v%d-7", i))
	}
	c := compiled(t, "GET", "https://api.example.com/", h, nil)
	for range 5 {
		req, err := c.Build(context.Background(), roots{"parameters": map[string]any{"n": 7}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(req.Header, want) {
			t.Fatalf("headers = %v, want %v", req.Header, want)
		}
	}
}

func TestCompileRejectsHeadersDifferingOnlyInCase(t *testing.T) {
	t.Parallel()
	p := field.NewPath("actions").Index(0).Child("execute", "stateless_http")
	_, errs := Compile(&checker{}, p, Request{Method: "GET", URL: "https://api.example.com/",
		Headers: map[string]string{"X-Key": "a", "x-key": "b", "Accept": "c"}}, Defaults{})
	if len(errs) != 1 || errs[0].Type != field.TypeDuplicate || errs[0].Path != p.Child("headers", "x-key").String() {
		t.Fatalf("problems = %v, want one duplicate at headers.x-key", errs)
	}
	_, errs = Compile(&checker{}, p, Request{Method: "GET", URL: "https://api.example.com/",
		Headers: map[string]string{"X-Key": "a"}}, Defaults{Path: field.NewPath("stateless_http"),
		Headers: map[string]string{"x-key": "shared"}})
	if len(errs) != 0 {
		t.Fatalf("an action header overriding a shared one is not a duplicate: %v", errs)
	}
}
