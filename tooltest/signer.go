package tooltest

import (
	"net/http"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
)

// Signer makes webhook deliveries signed with Secret, as a platform would send them.
type Signer struct {
	Secret string
}

// GitHub returns an Inbound for body signed the GitHub way (X-Hub-Signature-256), with X-GitHub-Delivery set
// to deliveryID when it is not empty.
func (s Signer) GitHub(body []byte, deliveryID string) *tool.Inbound {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Hub-Signature-256", webhook.SignGitHub([]byte(s.Secret), body))
	if deliveryID != "" {
		h.Set("X-GitHub-Delivery", deliveryID)
	}
	return &tool.Inbound{Headers: h, Body: body}
}

// Standard returns an Inbound for body signed the Standard Webhooks way (webhook-id, webhook-timestamp,
// webhook-signature) at time at. Secret is base64, with or without the whsec_ prefix, as the scheme defines it;
// a Secret that is not yields an Inbound without signature headers.
func (s Signer) Standard(body []byte, id string, at time.Time) *tool.Inbound {
	h := webhook.SignStandard([]byte(s.Secret), id, at, body)
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &tool.Inbound{Headers: h, Body: body}
}

// HTTPRequest returns in as an HTTP POST to url, for a Router or a host's endpoint.
func HTTPRequest(url string, in *tool.Inbound) *http.Request {
	req := httptestRequest(url, in.Body)
	for k, v := range in.Headers {
		req.Header[k] = v
	}
	return req
}
