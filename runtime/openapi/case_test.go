package openapi_test

import "testing"

// TestKeysInAnotherCase pins that a document spelling a key in another case ("Parameters"), which kin-openapi
// reads as the key (encoding/json matches fields case-insensitively), gives the operation the same parameters,
// shown and validated, as the usual spelling.
func TestKeysInAnotherCase(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for _, key := range []string{"parameters", "Parameters"} {
		tl := loadDoc(t, srv, `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/p":{"get":{
"operationId":"g","`+key+`":[{"name":"q","in":"query","required":true,"schema":{"type":"string","maxLength":3}}],
"responses":{"200":{"description":"ok"}}}}}}`, "", "")
		if s := tl.Skipped(); len(s) != 0 {
			t.Fatalf("%s: skipped %+v", key, s)
		}
		if res := invokeOnce(t, tl, "g", map[string]any{"q": "ab"}); res.IsError {
			t.Errorf("%s: %+v", key, res.Error)
		} else if r := srv.last(t); r.RawQuery != "q=ab" {
			t.Errorf("%s: query %q", key, r.RawQuery)
		}
		for _, args := range []map[string]any{{"q": "toolong"}, {}} {
			if res := invokeOnce(t, tl, "g", args); !res.IsError {
				t.Errorf("%s: %v was sent", key, args)
			}
		}
	}
}
