package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrBadSignature is wrapped by every signature failure: a missing, malformed or mismatching signature, a stale or
// future timestamp, an empty secret, or a request that carries no known signature header at all. Error texts name
// the header and the reason, never the secret or a signature value.
var ErrBadSignature = errors.New("webhook: bad signature")

// Header names the built-in schemes read, in canonical form.
const (
	headerGitHub         = "X-Hub-Signature-256"
	headerGitHubDelivery = "X-Github-Delivery"
	headerStdID          = "Webhook-Id"
	headerStdTimestamp   = "Webhook-Timestamp"
	headerStdSignature   = "Webhook-Signature"
)

// DefaultTolerance is how far a Standard Webhooks timestamp may be from the receive time, either way.
const DefaultTolerance = 5 * time.Minute

// Failures on the hot path are fixed values so that rejecting a flood of forgeries does not allocate.
var (
	errNoSecret        = fmt.Errorf("%w: no secret", ErrBadSignature)
	errNoPayload       = fmt.Errorf("%w: no payload", ErrBadSignature)
	errNoHeader        = fmt.Errorf("%w: no signature header (want %s or webhook-signature)", ErrBadSignature, headerGitHub)
	errGitHubMissing   = fmt.Errorf("%w: missing %s header", ErrBadSignature, headerGitHub)
	errGitHubMalformed = fmt.Errorf("%w: malformed %s header (want sha256= and 64 hex digits)", ErrBadSignature, headerGitHub)
	errGitHubMismatch  = fmt.Errorf("%w: %s does not match", ErrBadSignature, headerGitHub)
	errStdID           = fmt.Errorf("%w: missing webhook-id header", ErrBadSignature)
	errStdTimestamp    = fmt.Errorf("%w: missing or malformed webhook-timestamp header (want unix seconds)", ErrBadSignature)
	errStdMissing      = fmt.Errorf("%w: missing webhook-signature header", ErrBadSignature)
	errStdMalformed    = fmt.Errorf("%w: no well-formed v1 signature in webhook-signature header", ErrBadSignature)
	errStdMismatch     = fmt.Errorf("%w: no webhook-signature entry matches", ErrBadSignature)
	// No "whsec_" in the text: an error must not contain any part of a secret's shape that could match it.
	errStdSecret = fmt.Errorf("%w: the Standard Webhooks secret is not base64; to use raw secret bytes, "+
		"register webhook.StandardWebhooks{RawSecret: true}", ErrBadSignature)
)

// Signed is an inbound payload as a verifier sees it.
type Signed struct {
	// Header holds the request headers; keys may be canonical (as net/http builds them) or in any other case.
	Header http.Header
	// Body is the raw request body, exactly as received.
	Body []byte
	// Now is the receive time timestamps are checked against; the zero value means time.Now().
	Now time.Time
}

// Verifier is a signature scheme; hosts register their own alongside the built-in ones. Implementations must be safe
// for concurrent use.
type Verifier interface {
	// Applies reports whether h carries this scheme's signature headers.
	Applies(h http.Header) bool
	// Verify returns nil when the signature is valid for secret, else an error wrapping ErrBadSignature. The error
	// must not contain the secret or a signature value.
	Verify(secret []byte, s *Signed) error
}

// Verify checks s with the first scheme whose signature header is present: the hosts' verifiers in the order given,
// then StandardWebhooks{} (webhook-signature), then GitHub{} (X-Hub-Signature-256). Every failure wraps
// ErrBadSignature, including an empty secret, a request with no known signature header, and a host verifier's error
// that did not wrap it itself. Verify is safe for concurrent use.
func Verify(secret []byte, s *Signed, hosts ...Verifier) error {
	if len(secret) == 0 {
		return errNoSecret
	}
	if s == nil {
		return errNoPayload
	}
	for _, v := range hosts {
		if v == nil || !v.Applies(s.Header) {
			continue
		}
		err := v.Verify(secret, s)
		if err != nil && !errors.Is(err, ErrBadSignature) {
			return fmt.Errorf("%w: %w", ErrBadSignature, err)
		}
		return err
	}
	if (StandardWebhooks{}).Applies(s.Header) {
		return StandardWebhooks{}.Verify(secret, s)
	}
	if (GitHub{}).Applies(s.Header) {
		return GitHub{}.Verify(secret, s)
	}
	return errNoHeader
}

// DeliveryID returns the sender's delivery id from the known headers: X-GitHub-Delivery, then webhook-id; "" when
// neither is present.
func DeliveryID(h http.Header) string {
	if id := header(h, headerGitHubDelivery); id != "" {
		return id
	}
	return header(h, headerStdID)
}

// header returns the first value of the field name (given in canonical form).
func header(h http.Header, name string) string {
	if v := values(h, name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// values returns the values of the field name (given in canonical form), also when the map was built by hand with
// keys in another case.
func values(h http.Header, name string) []string {
	if v := h[name]; len(v) > 0 {
		return v
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// GitHub is GitHub's scheme: X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>.
type GitHub struct{}

// Applies reports whether h has a non-empty X-Hub-Signature-256 header.
func (GitHub) Applies(h http.Header) bool { return header(h, headerGitHub) != "" }

// Verify checks the X-Hub-Signature-256 header against the HMAC of the body; hex digits may be in either case.
func (GitHub) Verify(secret []byte, s *Signed) error {
	if len(secret) == 0 {
		return errNoSecret
	}
	v := header(s.Header, headerGitHub)
	if v == "" {
		return errGitHubMissing
	}
	hexSum, ok := strings.CutPrefix(v, "sha256=")
	var src [2 * sha256.Size]byte
	var got [sha256.Size]byte
	if !ok || len(hexSum) != len(src) {
		return errGitHubMalformed
	}
	copy(src[:], hexSum)
	if _, err := hex.Decode(got[:], src[:]); err != nil {
		return errGitHubMalformed
	}
	if !hmac.Equal(got[:], sum(secret, nil, s.Body)) {
		return errGitHubMismatch
	}
	return nil
}

// SignGitHub returns the X-Hub-Signature-256 header value for body, for tests, the tooltest harness and hosts that
// relay deliveries. It returns "" for an empty secret, which Verify rejects.
func SignGitHub(secret, body []byte) string {
	if len(secret) == 0 {
		return ""
	}
	return "sha256=" + hex.EncodeToString(sum(secret, nil, body))
}

// StandardWebhooks is the Standard Webhooks scheme (standardwebhooks.com): headers webhook-id, webhook-timestamp
// (unix seconds) and webhook-signature, a space-separated list of "v1,<base64 HMAC-SHA256>" entries of which any one
// may match (other versions are skipped; several header lines count as one list). The signed content is
// id + "." + timestamp + "." + body.
//
// As in the reference libraries, the secret is base64 (standard alphabet, padded): a "whsec_" prefix is stripped
// and the rest decoded, and a secret without the prefix is decoded too. A secret that is not base64 fails every
// verification. Hosts whose senders sign with the secret's bytes as they are set RawSecret and register the value
// with the root package's WithWebhookVerifiers, which puts it before the built-in scheme.
type StandardWebhooks struct {
	// Tolerance is how far the timestamp may be from Signed.Now, either way; zero or less means DefaultTolerance.
	Tolerance time.Duration
	// RawSecret uses the secret's bytes as the HMAC key unchanged, "whsec_" included, instead of decoding them.
	RawSecret bool
}

// Applies reports whether h has a non-empty webhook-signature header.
func (StandardWebhooks) Applies(h http.Header) bool { return header(h, headerStdSignature) != "" }

// Verify checks the timestamp against s.Now and the tolerance, then the webhook-signature entries against the HMAC
// of the signed content.
func (sw StandardWebhooks) Verify(secret []byte, s *Signed) error {
	key, err := standardKey(secret, sw.RawSecret)
	if err != nil {
		return err
	}
	id := header(s.Header, headerStdID)
	if id == "" {
		return errStdID
	}
	ts := header(s.Header, headerStdTimestamp)
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errStdTimestamp
	}
	if err := sw.checkTime(unix, s.Now); err != nil {
		return err
	}
	lines := values(s.Header, headerStdSignature)
	if len(lines) == 0 {
		return errStdMissing
	}
	want := sum(key, standardPrefix(id, ts), s.Body)
	wellFormed := false
	for _, line := range lines {
		for entry := range strings.FieldsSeq(line) {
			got, ok := decodeV1(entry)
			if !ok {
				continue
			}
			wellFormed = true
			if hmac.Equal(got[:], want) {
				return nil
			}
		}
	}
	if !wellFormed {
		return errStdMalformed
	}
	return errStdMismatch
}

// checkTime reports a timestamp outside the tolerance around now.
func (sw StandardWebhooks) checkTime(unix int64, now time.Time) error {
	tol := sw.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if now.IsZero() {
		now = time.Now()
	}
	switch age := now.Sub(time.Unix(unix, 0)); {
	case age > tol:
		return fmt.Errorf("%w: webhook-timestamp %s old (tolerance %s)", ErrBadSignature, age.Round(time.Second), tol)
	case age < -tol:
		return fmt.Errorf("%w: webhook-timestamp %s in the future (tolerance %s)", ErrBadSignature, (-age).Round(time.Second), tol)
	}
	return nil
}

// SignStandard returns the three Standard Webhooks headers (canonical keys) for body sent at time at, with the
// secret decoded as StandardWebhooks{}.Verify decodes it. It returns nil for a secret Verify rejects: empty, or
// not non-empty base64 after an optional "whsec_" prefix.
func SignStandard(secret []byte, id string, at time.Time, body []byte) http.Header {
	return StandardWebhooks{}.Sign(secret, id, at, body)
}

// Sign returns the three Standard Webhooks headers (canonical keys) for body sent at time at, with the secret
// read as sw reads it (see RawSecret); nil for a secret Verify rejects.
func (sw StandardWebhooks) Sign(secret []byte, id string, at time.Time, body []byte) http.Header {
	key, err := standardKey(secret, sw.RawSecret)
	if err != nil {
		return nil
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	return http.Header{
		headerStdID:        {id},
		headerStdTimestamp: {ts},
		headerStdSignature: {"v1," + base64.StdEncoding.EncodeToString(sum(key, standardPrefix(id, ts), body))},
	}
}

// standardKey derives the HMAC key from a Standard Webhooks secret: its bytes when raw, else the base64 after an
// optional "whsec_" prefix.
func standardKey(secret []byte, raw bool) ([]byte, error) {
	if len(secret) == 0 {
		return nil, errNoSecret
	}
	if raw {
		return secret, nil
	}
	b64, _ := bytes.CutPrefix(secret, []byte("whsec_"))
	key := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(key, b64)
	switch {
	case err != nil:
		return nil, errStdSecret
	case n == 0:
		return nil, errNoSecret
	}
	return key[:n], nil
}

// standardPrefix is the signed content before the body: id "." timestamp ".".
func standardPrefix(id, ts string) []byte {
	p := make([]byte, 0, len(id)+len(ts)+2)
	p = append(p, id...)
	p = append(p, '.')
	p = append(p, ts...)
	return append(p, '.')
}

// decodeV1 decodes one webhook-signature entry; ok is false for anything but "v1," and 32 bytes of valid base64.
func decodeV1(entry string) (got [sha256.Size]byte, ok bool) {
	var src [44]byte // base64.StdEncoding.EncodedLen(sha256.Size)
	var dst [33]byte // base64.StdEncoding.DecodedLen(len(src)): Decode may need room for a whole quantum
	b64, ok := strings.CutPrefix(entry, "v1,")
	if !ok || len(b64) != len(src) {
		return got, false
	}
	copy(src[:], b64)
	n, err := base64.StdEncoding.Decode(dst[:], src[:])
	if err != nil || n != sha256.Size {
		return got, false
	}
	copy(got[:], dst[:n])
	return got, true
}

// sum is HMAC-SHA256(key, prefix || body).
func sum(key, prefix, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(prefix)
	m.Write(body)
	return m.Sum(nil)
}

var (
	_ Verifier = GitHub{}
	_ Verifier = StandardWebhooks{}
)
