package tool_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
)

const standardWebhooksManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: standard-webhooks
description: Receives Standard Webhooks.
settings:
  properties:
    secret: {type: string, format: password}
events:
  - name: hook
    description: A signed delivery.
    message: "delivered"
    receive:
      webhook:
        secret: "{settings.secret}"
`

type standardWebhooksCase struct {
	Name            string            `json:"name"`
	SignSecret      string            `json:"sign_secret"`
	VerifySecret    string            `json:"verify_secret"`
	ID              string            `json:"id"`
	Payload         string            `json:"payload"`
	OffsetSeconds   int64             `json:"offset_seconds"`
	AtUnix          int64             `json:"at_unix"`
	DeleteHeaders   []string          `json:"delete_headers"`
	SetHeaders      map[string]string `json:"set_headers"`
	SignatureList   []string          `json:"signature_list"`
	IgnoreTimestamp bool              `json:"ignore_timestamp"`
	RawSecret       bool              `json:"raw_secret"`
	ExpectSignature string            `json:"expect_signature"`
	Valid           bool              `json:"valid"`
}

// TestStandardWebhooksReferenceCases runs the reference library's test cases (testdata/conformance/
// standard-webhooks.json) through Deliver: a valid case activates the event, an invalid one is discarded without
// activating. The reference's VerifyIgnoringTimestamp and NewWebhookRaw are the host verifiers
// StandardWebhooks{Tolerance: a century} and StandardWebhooks{RawSecret: true}.
func TestStandardWebhooksReferenceCases(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/conformance/standard-webhooks.json")
	if err != nil {
		t.Fatal(err)
	}
	var suite struct{ Cases []standardWebhooksCase }
	if err := json.Unmarshal(raw, &suite); err != nil {
		t.Fatal(err)
	}
	if len(suite.Cases) != 20 {
		t.Fatalf("%d cases, want the reference's 20", len(suite.Cases))
	}
	passed := 0
	for _, c := range suite.Cases {
		if standardWebhooksCaseHolds(t, c) {
			passed++
		}
	}
	t.Logf("Standard Webhooks reference cases: %d of %d", passed, len(suite.Cases))
}

func standardWebhooksCaseHolds(t *testing.T, c standardWebhooksCase) bool {
	t.Helper()
	signedAt := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).Add(time.Duration(c.OffsetSeconds) * time.Second)
	if c.AtUnix != 0 {
		signedAt = time.Unix(c.AtUnix, 0)
	}
	clock := &manualClock{now: signedAt.Add(-time.Duration(c.OffsetSeconds)*time.Second + 500*time.Millisecond)}
	opts := []tool.Option{tool.WithClock(clock), tool.WithSettings(map[string]any{"secret": c.VerifySecret})}
	switch {
	case c.IgnoreTimestamp:
		opts = append(opts, tool.WithWebhookVerifiers(webhook.StandardWebhooks{Tolerance: 100 * 365 * 24 * time.Hour}))
	case c.RawSecret:
		opts = append(opts, tool.WithWebhookVerifiers(webhook.StandardWebhooks{RawSecret: true}))
	}
	task := newTask(t, mustLoadSrc(t, standardWebhooksManifest, opts...), tool.TaskConfig{})

	h := webhook.SignStandard([]byte(c.SignSecret), c.ID, signedAt, []byte(c.Payload))
	if h == nil {
		t.Errorf("%s: SignStandard refused the signing secret", c.Name)
		return false
	}
	sig := h.Get("webhook-signature")
	if c.ExpectSignature != "" && sig != c.ExpectSignature {
		t.Errorf("%s: signature %s, want %s", c.Name, sig, c.ExpectSignature)
		return false
	}
	if c.SignatureList != nil {
		h.Set("webhook-signature", strings.ReplaceAll(strings.Join(c.SignatureList, " "), "<signature>", sig))
	}
	for k, v := range c.SetHeaders {
		h.Set(k, v)
	}
	for _, k := range c.DeleteHeaders {
		h.Del(k)
	}
	d := deliver(t, task, &tool.Inbound{Headers: h, Body: []byte(c.Payload)})
	if activated := len(d.Activations) == 1; activated != c.Valid {
		t.Errorf("%s: activated = %v, want %v (discards %+v)", c.Name, activated, c.Valid, d.Discarded)
		return false
	}
	for _, x := range d.Discarded {
		if key := strings.TrimPrefix(c.VerifySecret, "whsec_"); key != "" && strings.Contains(x.Detail, key) {
			t.Errorf("%s: discard detail %q holds the secret", c.Name, x.Detail)
			return false
		}
	}
	return true
}

// TestStandardWebhooksSecretIsBase64 pins the breaking change of issue 17: an un-prefixed secret is base64 (as in
// the reference libraries), so a sender signing with its text as raw bytes fails unless the host opts into raw
// secrets, and a secret that is not base64 at all is a bad signature that says how to opt in.
func TestStandardWebhooksSecretIsBase64(t *testing.T) {
	t.Parallel()
	const hexSecret = "0123456789abcdef0123456789abcdef" // valid base64 too: decoded, not used as text
	body := []byte(`{"n":1}`)
	clock := newManualClock()
	rawSigned := func(secret string) *tool.Inbound {
		return &tool.Inbound{Headers: webhook.StandardWebhooks{RawSecret: true}.Sign([]byte(secret), "msg_"+secret[:4], clock.Now(), body), Body: body}
	}
	tests := []struct {
		name, secret string
		in           *tool.Inbound
		raw          bool
		want         string // "activated" or the discard reason
		detail       string
	}{
		{"hex secret signed as text, default", hexSecret, rawSigned(hexSecret), false, "bad_signature", "no webhook-signature entry matches"},
		{"hex secret signed as text, raw opted in", hexSecret, rawSigned(hexSecret), true, "activated", ""},
		{"hex secret signed as base64", hexSecret, &tool.Inbound{Headers: webhook.SignStandard([]byte(hexSecret), "msg_b64", clock.Now(), body), Body: body}, false, "activated", ""},
		{"text secret, default", "not base64!", rawSigned("not base64!"), false, "bad_signature", "RawSecret: true"},
		{"text secret, raw opted in", "not base64!", rawSigned("not base64!"), true, "activated", ""},
	}
	for i, tt := range tests {
		opts := []tool.Option{tool.WithClock(clock), tool.WithSettings(map[string]any{"secret": tt.secret})}
		if tt.raw {
			opts = append(opts, tool.WithWebhookVerifiers(webhook.StandardWebhooks{RawSecret: true}))
		}
		task := newTask(t, mustLoadSrc(t, standardWebhooksManifest, opts...), tool.TaskConfig{})
		d := deliver(t, task, tt.in)
		got := "activated"
		if len(d.Discarded) == 1 {
			got = d.Discarded[0].Reason
			if !strings.Contains(d.Discarded[0].Detail, tt.detail) || strings.Contains(d.Discarded[0].Detail, tt.secret) {
				t.Errorf("%d %s: detail %q, want it to contain %q and not the secret", i, tt.name, d.Discarded[0].Detail, tt.detail)
			}
		}
		if got != tt.want {
			t.Errorf("%d %s: %s, want %s", i, tt.name, got, tt.want)
		}
	}
}
