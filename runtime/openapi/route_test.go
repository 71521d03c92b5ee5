package openapi_test

import (
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// routeDoc writes what tells operations apart into their paths, as AWS, Flickr, weatherbit and OBS documents of
// the APIs-guru directory do.
const routeDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/#X-Amz-Target=Svc_2012.GetItem":{"post":{"operationId":"GetItem","parameters":[
 {"name":"X-Amz-Target","in":"header","required":true,"schema":{"type":"string","enum":["Svc_2012.GetItem"]}}],
 "requestBody":{"required":true,"content":{"application/x-amz-json-1.0":{"schema":{"type":"object","properties":{"Key":{"type":"string"}}}}}},
 "responses":{"200":{"description":"ok"}}}},
"/#X-Amz-Target=Svc_2012.PutItem":{"post":{"parameters":[],
 "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object"}}}},
 "responses":{"200":{"description":"ok"}}}},
"/#Action=CreateIpam":{"get":{"operationId":"GET_CreateIpam","parameters":[
 {"name":"Description","in":"query","schema":{"type":"string"}},
 {"name":"Action","in":"query","required":true,"schema":{"type":"string","enum":["CreateIpam"]}}],
 "responses":{"200":{"description":"ok"}}}},
"/rest?method=flickr.photos.search":{"get":{"summary":"Search photos.","parameters":[
 {"name":"text","in":"query","schema":{"type":"string"}},
 {"name":"method","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/rest?method=flickr.photos.getInfo":{"get":{"summary":"Photo info.","parameters":[
 {"name":"photo_id","in":"query","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/current?city_id={city_id}":{"get":{"parameters":[
 {"name":"city_id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/published/{project}?view=status":{"get":{"parameters":[
 {"name":"project","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}
}}`

// TestRoutesWithQueryAndFragment pins how a path's "?k=v" and "#..." parts are used: the fragment is never sent
// and only tells operations apart, X-Amz-Target=... becomes the header AWS JSON-protocol services read, a fragment
// k=v fixes the declared parameter k, a fixed query pair is sent and wins (an argument of its name is refused), and
// a {name} query value sends that parameter under the pair's key. Names and descriptions tell the operations apart.
func TestRoutesWithQueryAndFragment(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, routeDoc, "", "")
	if s := tl.Skipped(); len(s) != 0 {
		t.Fatalf("skipped: %+v", s)
	}
	for _, c := range []struct {
		action      string
		args        map[string]any
		method      string
		path, query string
		target      string
		contentType string
	}{
		{action: "GetItem", args: map[string]any{"body": map[string]any{"Key": "k"}}, method: "POST", path: "/v3/",
			target: "Svc_2012.GetItem", contentType: "application/x-amz-json-1.0"},
		{action: "post_X_Amz_Target_Svc_2012_PutItem", args: map[string]any{"body": map[string]any{}}, method: "POST",
			path: "/v3/", target: "Svc_2012.PutItem"},
		{action: "GET_CreateIpam", args: map[string]any{"Description": "d"}, method: "GET", path: "/v3/",
			query: "Action=CreateIpam&Description=d"},
		{action: "get_rest_method_flickr_photos_search", args: map[string]any{"text": "cat & dog"}, method: "GET",
			path: "/v3/rest", query: "method=flickr.photos.search&text=cat+%26+dog"},
		{action: "get_rest_method_flickr_photos_getInfo", args: map[string]any{"photo_id": "7"}, method: "GET",
			path: "/v3/rest", query: "method=flickr.photos.getInfo&photo_id=7"},
		{action: "get_current_city_id_city_id", args: map[string]any{"city_id": "a/b"}, method: "GET",
			path: "/v3/current", query: "city_id=a%2Fb"},
		{action: "get_published_project_view_status", args: map[string]any{"project": "p"}, method: "GET",
			path: "/v3/published/p", query: "view=status"},
	} {
		res := invokeOnce(t, tl, c.action, c.args)
		if res.IsError {
			t.Errorf("%s: %+v", c.action, res.Error)
			continue
		}
		r := srv.last(t)
		if r.Method != c.method || r.EscapedPath != c.path || r.RawQuery != c.query || r.Header.Get("X-Amz-Target") != c.target {
			t.Errorf("%s: %s %s ? %s X-Amz-Target %q, want %s %s ? %s %q", c.action, r.Method, r.EscapedPath, r.RawQuery,
				r.Header.Get("X-Amz-Target"), c.method, c.path, c.query, c.target)
		}
		if c.contentType != "" && r.Header.Get("Content-Type") != c.contentType {
			t.Errorf("%s: Content-Type %q, want %q", c.action, r.Header.Get("Content-Type"), c.contentType)
		}
		if strings.Contains(r.URI, "#") {
			t.Errorf("%s: the fragment was sent: %s", c.action, r.URI)
		}
	}
	for _, c := range []struct {
		action string
		args   map[string]any
	}{
		{"get_rest_method_flickr_photos_search", map[string]any{"method": "flickr.people.delete"}},
		{"GetItem", map[string]any{"X-Amz-Target": "Svc_2012.DeleteTable", "body": map[string]any{}}},
	} {
		before := srv.count()
		res := invokeOnce(t, tl, c.action, c.args)
		if !res.IsError || res.Error.Kind != runtime.KindInvalidArguments || srv.count() != before {
			t.Errorf("%s %v: %+v, sent %d: want invalid_arguments and nothing sent", c.action, c.args, res.Error,
				srv.count()-before)
		}
	}
	described := map[string]string{}
	for _, f := range tl.Functions(tool.Capability{}) {
		described[f.Name] = f.Description
	}
	for name, want := range map[string]string{
		"api_get_rest_method_flickr_photos_search": "Sends query method=flickr.photos.search.",
		"api_GetItem":                     "Sends header X-Amz-Target=Svc_2012.GetItem.",
		"api_get_current_city_id_city_id": "Sends query city_id={city_id}.",
	} {
		if !strings.HasSuffix(described[name], want) {
			t.Errorf("%s: description %q does not end with %q", name, described[name], want)
		}
	}
}
