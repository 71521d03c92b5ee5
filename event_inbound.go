package tool

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/events/webhook"
	"github.com/commonagents-go/tool/internal/jsonlimit"
	"github.com/commonagents-go/tool/internal/jsonvalue"
)

// parsePayload is the payload of a body: its JSON value, or the body as text when it is not JSON (SPEC §9.1),
// empty included. JSON is what jsonvalue reads, the library's one reading: valid JSON only (no byte order mark,
// no "1."), numbers beyond float64 as their text, never ±Inf. Both copy what they keep: the payload never aliases
// the caller's Body.
//
// A body that opens an array or object and nests or holds more than the limits allow is refused with a
// *jsonlimit.Error before anything is built; the same pass validates it. Other bodies become one value (a JSON
// scalar, or the body as text).
func (t *Tool) parsePayload(body []byte) (any, error) {
	v, err := jsonvalue.DecodeWithin(body, t.opts.limits.InboundDepth, t.opts.limits.InboundValues)
	if err == nil {
		return v, nil
	}
	var over *jsonlimit.Error
	if b := bytes.TrimLeft(body, " \t\r\n"); errors.As(err, &over) && len(b) > 0 && (b[0] == '[' || b[0] == '{') {
		return nil, err
	}
	return string(body), nil
}

// deliveryID is the sender's delivery id from the headers it is known by. A Standard Webhooks request is
// identified by its webhook-id, which its signature covers: an X-GitHub-Delivery header added to a replay must
// not make it look new.
func deliveryID(h http.Header) string {
	if h == nil {
		return ""
	}
	if (webhook.StandardWebhooks{}).Applies(h) {
		if id := h.Get("webhook-id"); id != "" {
			return id
		}
	}
	return webhook.DeliveryID(h)
}

// signatureVerdicts checks one inbound's signature for each event, once per distinct secret (the events of a
// tool usually share one).
type signatureVerdicts struct {
	tool *Tool
	in   *Inbound
	now  time.Time
	done []verdict
}

type verdict struct {
	secret []byte
	detail string // "" = valid
}

// check returns the reason and detail of discarding the inbound for ev before any filter runs, or "" when the
// signature is valid or the event is not signed.
func (s *signatureVerdicts) check(ev *event) (reason, detail string) {
	if ev.secretErr != "" {
		return ReasonMisconfigured, ev.secretErr
	}
	if len(ev.secret) == 0 {
		return "", ""
	}
	for _, v := range s.done {
		if bytes.Equal(v.secret, ev.secret) {
			return v.reason()
		}
	}
	v := verdict{secret: ev.secret}
	signed := &webhook.Signed{Header: s.in.Headers, Body: s.in.Body, Now: s.now}
	if err := webhook.Verify(ev.secret, signed, s.tool.opts.verifiers...); err != nil {
		v.detail = s.tool.secrets.Encoded(err.Error())
	}
	s.done = append(s.done, v)
	return v.reason()
}

func (v verdict) reason() (string, string) {
	if v.detail == "" {
		return "", ""
	}
	return ReasonBadSignature, v.detail
}

// staleGitHub returns why a GitHub delivery is refused for its age (Limits.GitHubMaxAge), or "".
func (t *Tool) staleGitHub(p *inbound) string {
	limit := t.opts.limits.GitHubMaxAge
	if limit <= 0 || !webhook.IsGitHub(p.in.Headers) {
		return ""
	}
	at, ok := webhook.GitHubPayloadTime(p.payload)
	if age := p.received.Sub(at); ok && age > limit {
		return fmt.Sprintf("the GitHub delivery is %s old by its payload's own timestamps, more than the host allows (%s): "+
			"a replay is refused, since X-GitHub-Delivery is not signed", age.Round(time.Second), limit)
	}
	return ""
}
