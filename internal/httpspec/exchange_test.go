package httpspec

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/commonagents-go/tool/runtime"
)

func TestExchange(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "rid")
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"error":"exists"}`)
			return
		}
		_, _ = io.WriteString(w, `{"data":{"id":42}}`)
	})
	post := func(path string) *Compiled {
		return compiled(t, "POST", srv.URL+path, nil, map[string]any{"a": "{parameters.a}"})
	}
	args := roots{"parameters": map[string]any{"a": "xyz"}}

	res, err := post("/ok").Exchange(context.Background(), srv.Client(), args, 0, mustPath(t, "$.data.id"))
	if err != nil || res.Error != nil {
		t.Fatalf("ok: %v %v", err, res.Error)
	}
	if res.Output != int64(42) || res.BytesOut != int64(len(`{"a":"xyz"}`)) || res.BytesIn != int64(len(`{"data":{"id":42}}`)) {
		t.Errorf("ok: result = %+v", res)
	}
	if res.ServerData["status"] != 200 || res.ServerData["headers"].(map[string][]string)["X-Request-Id"][0] != "rid" {
		t.Errorf("ok: ServerData = %v", res.ServerData)
	}
	if _, ok := res.ServerData["body"]; ok {
		t.Error("ok: ServerData holds the body of a successful call")
	}

	res, err = post("/fail").Exchange(context.Background(), srv.Client(), args, 0, nil)
	if err != nil || res.Error == nil || res.Error.Kind != runtime.KindInvalidRequest || res.Error.Status != 409 {
		t.Fatalf("fail: %v %+v", err, res)
	}
	if res.ServerData["status"] != 409 || res.ServerData["body"] != `{"error":"exists"}` || res.Output != nil {
		t.Errorf("fail: ServerData = %v, Output = %v", res.ServerData, res.Output)
	}

	res, err = compiled(t, "GET", srv.URL+"/{parameters.a}", nil, nil).Exchange(context.Background(), srv.Client(),
		roots{"parameters": map[string]any{"a": ".."}}, 0, nil)
	if err != nil || res.Error == nil || res.Error.Kind != runtime.KindInvalidArguments || res.ServerData != nil {
		t.Errorf("bad argument: %v %+v", err, res)
	}
}
