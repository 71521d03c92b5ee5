package tool_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

const encodedSecretsManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: echoes
description: A server that echoes what it was sent, encoded.
settings:
  properties:
    base_url: {type: string}
    basic: {type: string, format: password}
    key: {type: string, format: password}
actions:
  - name: echo
    description: Sends the secrets every way and gets them back encoded.
    parameters:
      properties:
        status: {type: integer, default: 200}
    execute:
      stateless_http:
        method: POST
        url: "{settings.base_url}/echo?key={settings.key}&status={parameters.status}"
        headers:
          Authorization: "Basic {settings.basic}"
          X-Token: "tok {auth.svc()}"
        body:
          key: "{settings.key}"
`

// Secret values with characters that URL and JSON escaping change.
const (
	basicSecret = "dXNlcjpwQHNzdzByZA=="
	keySecret   = `k3y/with space&"quote"<x>`
	tokenSecret = "svc_TOKEN_789"
)

// encodedForms returns text in every form a server may echo it: as is, base64 (standard and URL alphabets, padded
// and raw), URL-escaped (query and path) and JSON-escaped (with and without HTML escaping).
func encodedForms(text string) []string {
	b := []byte(text)
	forms := []string{text,
		base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(text), url.PathEscape(text)}
	for _, html := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(text)
		forms = append(forms, strings.Trim(strings.TrimSpace(buf.String()), `"`))
	}
	return forms
}

// echoEncoded answers with what it received, each part in several encodings, with the status asked for.
func echoEncoded(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	auth, token := r.Header.Get("Authorization"), r.Header.Get("X-Token")
	echo := map[string]any{
		"query": r.URL.RawQuery, "uri": r.RequestURI, "body": body.String(),
		"body_b64":      base64.StdEncoding.EncodeToString(body.Bytes()),
		"key_b64":       base64.RawURLEncoding.EncodeToString([]byte(r.URL.Query().Get("key"))),
		"uri_b64":       base64.StdEncoding.EncodeToString([]byte(r.RequestURI)),
		"token_b64":     base64.StdEncoding.EncodeToString([]byte(strings.TrimPrefix(token, "tok "))),
		"token_escaped": url.QueryEscape(token),
	}
	for i, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		echo[fmt.Sprintf("auth_b64_%d", i)] = enc.EncodeToString([]byte(auth))
	}
	w.Header().Set("X-Echo-Auth", base64.StdEncoding.EncodeToString([]byte(auth)))
	w.Header().Set("Content-Type", "application/json")
	status := 200
	_, _ = fmt.Sscan(r.URL.Query().Get("status"), &status)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(echo)
}

// A server that echoes a secret, or a header value, URL or body holding one, base64-, URL- or JSON-encoded gets
// none of it to the result, errors, facts or logs: those rendered texts are secrets of the call.
func TestEncodedSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, echoEncoded)
	logs := &logBuffer{}
	rec := &factRecorder{}
	tl := mustLoadSrc(t, encodedSecretsManifest, tool.WithSettings(map[string]any{
		"base_url": srv.URL, "basic": basicSecret, "key": keySecret}),
		tool.WithAuth(tokens{"svc": tokenSecret}), tool.WithObserver(rec), tool.WithLogger(logs.logger()))
	task := newTask(t, tl, tool.TaskConfig{})

	var produced []any
	for _, status := range []int{200, 500} {
		res, err := task.Invoke(context.Background(), "echo", map[string]any{"status": status})
		if err != nil {
			t.Fatalf("status %d: %v", status, err)
		}
		if status == 200 && res.IsError {
			t.Fatalf("the echo failed: %v", res.Error)
		}
		produced = append(produced, res)
	}
	_ = task.Close(context.Background())
	produced = append(produced, rec.all())
	dump := logs.dump(t, produced)

	sent := srv.last(t)
	texts := []string{basicSecret, keySecret, tokenSecret, sent.Header.Get("Authorization"),
		sent.Header.Get("X-Token"), string(sent.Body), sent.RequestURI}
	for _, text := range texts {
		for _, form := range encodedForms(text) {
			// json.Marshal of the dump escapes < > & as \u003c: look for both spellings.
			quoted, _ := json.Marshal(form)
			for _, f := range []string{form, strings.Trim(string(quoted), `"`)} {
				if i := bytes.Index(dump, []byte(f)); i >= 0 {
					t.Errorf("%q (a form of %q) leaked: …%s…", f, text, dump[max(0, i-60):min(len(dump), i+len(f)+20)])
				}
			}
		}
	}
	if n := bytes.Count(dump, []byte("[redacted]")); n < 10 {
		t.Errorf("%d masks in the output: the test did not exercise the scrubbing", n)
	}
}

// A load warning can quote what a server answered while the manifest loaded (here the hints' listing of a
// declared mcp action, refused by a server that echoes its URL raw, query-escaped and in base64): Tool.Warnings
// masks the secret settings in every encoding, as a load error does.
func TestLoadWarningsMaskEncodedSecrets(t *testing.T) {
	t.Parallel()
	const key = "sk-load-warning-9c1e"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.URL.Query().Get("key")
		http.Error(w, fmt.Sprintf("refused key %s %s %s", k, url.QueryEscape(k), base64.StdEncoding.EncodeToString([]byte(k))),
			http.StatusInternalServerError)
	}))
	defer srv.Close()
	manifest := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: warned\ndescription: d\n" +
		"settings:\n  properties:\n    key: {type: string, format: password}\n" +
		"mcp:\n  transport: streamable_http\n  url: \"" + srv.URL + "/mcp?key={settings.key}\"\n" +
		"actions:\n  - name: a\n    description: d\n    parameters:\n      properties: {}\n    execute:\n      mcp: {}\n"
	tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithDiscovery(true),
		tool.WithSettings(map[string]any{"key": key}))
	if err != nil {
		t.Fatal(err)
	}
	warnings := fmt.Sprint(tl.Warnings())
	if !strings.Contains(warnings, "refused key") {
		t.Fatalf("warnings %s: want the server's refusal quoted", warnings)
	}
	for _, form := range []string{key, url.QueryEscape(key), base64.StdEncoding.EncodeToString([]byte(key))} {
		if strings.Contains(warnings, form) {
			t.Errorf("a warning holds the secret as %q: %s", form, warnings)
		}
	}
}
