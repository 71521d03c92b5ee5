package httpspec

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/commonagents-go/tool/internal/httpspec/httpspectest"
	"github.com/commonagents-go/tool/interp"
)

type (
	roots    = httpspectest.Roots
	checker  = httpspectest.Checker
	recorder = httpspectest.Recorder
)

var (
	newRecorder = httpspectest.NewRecorder
	jsonReply   = httpspectest.JSON
)

// compiled builds a Compiled the way Compile does, without a manifest.
func compiled(t testing.TB, method, rawURL string, headers map[string]string, body any) *Compiled {
	t.Helper()
	u, err := interp.ParseURL(rawURL, httpspectest.Trusted)
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", rawURL, err)
	}
	c := &Compiled{Method: method, URL: u, Headers: map[string]*interp.Template{}}
	for k, v := range headers {
		tpl, err := interp.Parse(v)
		if err != nil {
			t.Fatalf("Parse(%q): %v", v, err)
		}
		c.Headers[k] = tpl
	}
	if body != nil {
		if c.Body, err = interp.ParseValue(body); err != nil {
			t.Fatalf("ParseValue: %v", err)
		}
	}
	return c
}

// decodeJSON decodes b keeping number literals.
func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("body %q is not JSON: %v", b, err)
	}
	return v
}
