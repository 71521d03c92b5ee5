package openapi_test

import (
	"net/url"
	"reflect"
	"regexp"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// TestDirectorySample loads a fixed sample of the APIs-guru directory (testdata/directory/SOURCE.md), one
// document per case the whole-directory measurement (scripts/openapi-directory.sh) counts: every operation becomes
// a function or is skipped with a reason of the expected kind, and requests of the supported cases reach a
// recording server as the operation describes them (method, path, query, headers, body).
func TestDirectorySample(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	type request struct {
		action       string
		args         map[string]any
		method, path string
		query        url.Values
		header       map[string]string
		body         string
	}
	for _, c := range []struct {
		doc       string
		functions int
		skipped   *regexp.Regexp // every skip reason matches; nil: none
		skips     int
		requests  []request
	}{
		{doc: "amazonaws.com_dynamodb.json.gz", functions: 53, requests: []request{{action: "GetItem",
			args:   map[string]any{"body": map[string]any{"TableName": "things", "Key": map[string]any{"id": map[string]any{"S": "1"}}}},
			method: "POST", path: "/v3/", header: map[string]string{"X-Amz-Target": "DynamoDB_20120810.GetItem",
				"Content-Type": "application/json"}, body: `{"Key":{"id":{"S":"1"}},"TableName":"things"}`}}},
		{doc: "flickr.com.json.gz", functions: 25,
			requests: []request{{action: "getFavoritesContextByID", args: map[string]any{"api_key": "k", "photo_id": "7", "user_id": "u"},
				method: "GET", path: "/v3/rest", query: url.Values{"method": {"flickr.favorites.getContext"}, "api_key": {"k"},
					"photo_id": {"7"}, "user_id": {"u"}}}}},
		{doc: "weatherbit.io.json.gz", functions: 47, requests: []request{{action: "get_current_airquality_city_id_city_id",
			args: map[string]any{"city_id": 4487042, "key": "k"}, method: "GET", path: "/v3/current/airquality",
			query: url.Values{"city_id": {"4487042"}, "key": {"k"}}}}},
		{doc: "googleapis.com_monitoring.json.gz", functions: 14},
		{doc: "azure.com_network-applicationGateway.json.gz", functions: 17},
		{doc: "presalytics.io_converter.json.gz", functions: 1},
		{doc: "brainbi.net.json.gz", skipped: regexp.MustCompile(`no media type Invoke can send|has no name`)},
		{doc: "openbanking.org.uk_event-notifications-openapi.json.gz", functions: 1},
		{doc: "apisetu.gov.in_issuer.json.gz", skipped: regexp.MustCompile(`holds characters a path template cannot`)},
		{doc: "apideck.com_file-storage.json.gz"},
	} {
		tl := realManifest(t, srv, "../directory/"+c.doc, "{}")
		fns, skipped := tl.Functions(tool.Capability{}), tl.Skipped()
		if c.functions > 0 && len(fns) != c.functions || c.skips > 0 && len(skipped) != c.skips {
			t.Errorf("%s: %d functions, %d skipped, want %d and %d", c.doc, len(fns), len(skipped), c.functions, c.skips)
		}
		for _, s := range skipped {
			if c.skipped == nil || !c.skipped.MatchString(s.Reason) {
				t.Errorf("%s: %s skipped: %s", c.doc, s.Name, s.Reason)
			}
		}
		if c.skipped != nil && len(skipped) == 0 {
			t.Errorf("%s: nothing skipped, want skips matching %s", c.doc, c.skipped)
		}
		for _, rq := range c.requests {
			res := invokeOnce(t, tl, rq.action, rq.args)
			if res.IsError {
				t.Errorf("%s %s: %+v", c.doc, rq.action, res.Error)
				continue
			}
			r := srv.last(t)
			got, _ := url.ParseQuery(r.RawQuery)
			if r.Method != rq.method || r.EscapedPath != rq.path || len(rq.query)+len(got) > 0 && !reflect.DeepEqual(got, rq.query) ||
				string(r.Body) != rq.body {
				t.Errorf("%s %s: %s %s ? %v body %s, want %s %s ? %v body %s", c.doc, rq.action, r.Method, r.EscapedPath, got,
					r.Body, rq.method, rq.path, rq.query, rq.body)
			}
			for k, v := range rq.header {
				if r.Header.Get(k) != v {
					t.Errorf("%s %s: header %s %q, want %q", c.doc, rq.action, k, r.Header.Get(k), v)
				}
			}
		}
	}
}
