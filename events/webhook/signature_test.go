package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool/events/webhook"
)

// Documented vectors: GitHub's "Validating webhook deliveries" example and the Standard Webhooks reference test.
const (
	ghSecret = "It's a Secret to Everybody"
	ghBody   = "Hello, World!"
	ghSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

	swSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS     = "1614265330"
	swBody   = `{"test": 2432232314}`
	swSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var swNow = time.Unix(1614265330, 0)

// hdr builds a header with canonical keys from name, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// rawHdr builds a header map by hand, keys exactly as given.
func rawHdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return h
}

func stdHdr(sig string) http.Header {
	return hdr("webhook-id", swID, "webhook-timestamp", swTS, "webhook-signature", sig)
}

// hostScheme is a host-registered verifier keyed on one header.
type hostScheme struct {
	header string
	err    error
}

func (v hostScheme) Applies(h http.Header) bool           { return h.Get(v.header) != "" }
func (v hostScheme) Verify([]byte, *webhook.Signed) error { return v.err }

func TestVerify(t *testing.T) {
	t.Parallel()
	otherSW := "v1," + strings.Repeat("A", 43) + "="
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   string
		now    time.Time
		hosts  []webhook.Verifier
		errHas string // "" means the signature is valid
	}{
		{name: "github vector", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig), body: ghBody},
		{name: "github upper-case hex", secret: ghSecret, header: hdr("X-Hub-Signature-256", "sha256="+strings.ToUpper(ghSig[7:])), body: ghBody},
		{name: "github lower-case key by hand", secret: ghSecret, header: rawHdr("x-hub-signature-256", ghSig), body: ghBody},
		{name: "github wrong secret", secret: "It's a secret to everybody", header: hdr("X-Hub-Signature-256", ghSig), body: ghBody, errHas: "does not match"},
		{name: "github tampered body", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig), body: "Hello, World?", errHas: "does not match"},
		{name: "github sha1 prefix", secret: ghSecret, header: hdr("X-Hub-Signature-256", "sha1="+ghSig[7:]), body: ghBody, errHas: "malformed X-Hub-Signature-256"},
		{name: "github no prefix", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig[7:]), body: ghBody, errHas: "malformed"},
		{name: "github bad hex", secret: ghSecret, header: hdr("X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)), body: ghBody, errHas: "malformed"},
		{name: "github short", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig[:len(ghSig)-2]), body: ghBody, errHas: "malformed"},
		{name: "github long", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig+"00"), body: ghBody, errHas: "malformed"},
		{name: "github empty digest", secret: ghSecret, header: hdr("X-Hub-Signature-256", "sha256="), body: ghBody, errHas: "malformed"},
		{name: "no signature header", secret: ghSecret, header: hdr("X-GitHub-Delivery", "1", "X-Hub-Signature", "sha1=abc"), body: ghBody, errHas: "no signature header"},
		{name: "nil header", secret: ghSecret, body: ghBody, errHas: "no signature header"},
		{name: "empty secret", header: hdr("X-Hub-Signature-256", ghSig), body: ghBody, errHas: "no secret"},
		{name: "empty secret never passes a host", header: hdr("X-Sig", "x"), hosts: []webhook.Verifier{hostScheme{header: "X-Sig"}}, errHas: "no secret"},

		{name: "standard vector", secret: swSecret, header: stdHdr(swSig), body: swBody, now: swNow},
		{name: "standard lower-case keys by hand", secret: swSecret, header: rawHdr("webhook-id", swID, "webhook-timestamp", swTS, "webhook-signature", swSig), body: swBody, now: swNow},
		{name: "standard second entry matches", secret: swSecret, header: stdHdr(otherSW + " " + swSig), body: swBody, now: swNow},
		{name: "standard other versions skipped", secret: swSecret, header: stdHdr("v1a,abc  v2," + swSig[3:] + " " + swSig), body: swBody, now: swNow},
		{name: "standard entries in two header lines", secret: swSecret, header: hdr("webhook-id", swID, "webhook-timestamp", swTS, "webhook-signature", otherSW, "webhook-signature", swSig), body: swBody, now: swNow},
		{name: "standard non-matching entry", secret: swSecret, header: stdHdr(otherSW), body: swBody, now: swNow, errHas: "no webhook-signature entry matches"},
		{name: "standard wrong secret", secret: "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx", header: stdHdr(swSig), body: swBody, now: swNow, errHas: "no webhook-signature entry matches"},
		{name: "standard secret without prefix is base64 too", secret: swSecret[6:], header: stdHdr(swSig), body: swBody, now: swNow},
		{name: "standard raw secret by host choice", secret: swSecret[6:], header: stdHdr(swSig), body: swBody, now: swNow,
			hosts: []webhook.Verifier{webhook.StandardWebhooks{RawSecret: true}}, errHas: "no webhook-signature entry matches"},
		{name: "standard secret not base64", secret: "hex:0123", header: stdHdr(swSig), body: swBody, now: swNow, errHas: "not base64"},
		{name: "standard tampered body", secret: swSecret, header: stdHdr(swSig), body: `{"test": 2432232315}`, now: swNow, errHas: "no webhook-signature entry matches"},
		{name: "standard tampered id", secret: swSecret, header: hdr("webhook-id", swID+"x", "webhook-timestamp", swTS, "webhook-signature", swSig), body: swBody, now: swNow, errHas: "matches"},
		{name: "standard bad base64", secret: swSecret, header: stdHdr("v1," + strings.Repeat("!", 44)), body: swBody, now: swNow, errHas: "no well-formed v1 signature"},
		{name: "standard short base64", secret: swSecret, header: stdHdr("v1,g0hM9SsE"), body: swBody, now: swNow, errHas: "no well-formed"},
		{name: "standard only v2", secret: swSecret, header: stdHdr("v2," + swSig[3:]), body: swBody, now: swNow, errHas: "no well-formed"},
		{name: "standard missing id", secret: swSecret, header: hdr("webhook-timestamp", swTS, "webhook-signature", swSig), body: swBody, now: swNow, errHas: "missing webhook-id"},
		{name: "standard missing timestamp", secret: swSecret, header: hdr("webhook-id", swID, "webhook-signature", swSig), body: swBody, now: swNow, errHas: "webhook-timestamp"},
		{name: "standard malformed timestamp", secret: swSecret, header: hdr("webhook-id", swID, "webhook-timestamp", "2021-02-26T15:02:10Z", "webhook-signature", swSig), body: swBody, now: swNow, errHas: "malformed webhook-timestamp"},
		{name: "standard stale", secret: swSecret, header: stdHdr(swSig), body: swBody, now: swNow.Add(12 * time.Minute), errHas: "timestamp 12m0s old"},
		{name: "standard future", secret: swSecret, header: stdHdr(swSig), body: swBody, now: swNow.Add(-6 * time.Minute), errHas: "6m0s in the future"},
		{name: "standard just inside tolerance", secret: swSecret, header: stdHdr(swSig), body: swBody, now: swNow.Add(5 * time.Minute)},
		{name: "standard whsec secret not base64", secret: "whsec_not*base64", header: stdHdr(swSig), body: swBody, now: swNow, errHas: "not base64"},
		{name: "standard whsec secret empty", secret: "whsec_", header: stdHdr(swSig), body: swBody, now: swNow, errHas: "no secret"},
		{name: "standard chosen over github", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig, "webhook-id", swID, "webhook-timestamp", swTS, "webhook-signature", swSig), body: ghBody, now: swNow, errHas: "Standard Webhooks secret"},

		{name: "host chosen before built-ins", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig, "X-Sig", "x"), body: ghBody,
			hosts: []webhook.Verifier{hostScheme{header: "X-Sig", err: errors.New("host says no")}}, errHas: "host says no"},
		{name: "host accepts", secret: ghSecret, header: hdr("X-Hub-Signature-256", "bogus", "X-Sig", "x"), body: ghBody,
			hosts: []webhook.Verifier{nil, hostScheme{header: "X-Other"}, hostScheme{header: "X-Sig"}}},
		{name: "first applicable host wins", secret: ghSecret, header: hdr("X-Sig", "x"), body: ghBody,
			hosts: []webhook.Verifier{hostScheme{header: "X-Sig", err: webhook.ErrBadSignature}, hostScheme{header: "X-Sig"}}, errHas: "bad signature"},
		{name: "host not applicable falls back", secret: ghSecret, header: hdr("X-Hub-Signature-256", ghSig), body: ghBody,
			hosts: []webhook.Verifier{hostScheme{header: "X-Sig"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &webhook.Signed{Header: tt.header, Body: []byte(tt.body), Now: tt.now}
			err := webhook.Verify([]byte(tt.secret), s, tt.hosts...)
			if tt.errHas == "" {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, webhook.ErrBadSignature) {
				t.Fatalf("Verify = %v, want an error wrapping ErrBadSignature", err)
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Verify = %q, want it to contain %q", err, tt.errHas)
			}
			assertNoLeak(t, err, tt.secret, tt.header, tt.body)
		})
	}
}

// assertNoLeak fails when err shows the secret, a received signature, or a signature the secret would produce.
func assertNoLeak(t *testing.T, err error, secret string, h http.Header, body string) {
	t.Helper()
	msg := err.Error()
	banned := []string{}
	if secret != "" && secret != "whsec_" {
		banned = append(banned, secret)
		if gh := webhook.SignGitHub([]byte(secret), []byte(body)); gh != "" {
			banned = append(banned, gh[len("sha256="):])
		}
		if sw := webhook.SignStandard([]byte(secret), swID, swNow, []byte(body)); sw != nil {
			banned = append(banned, sw.Get("webhook-signature")[len("v1,"):])
		}
	}
	for _, name := range []string{"X-Hub-Signature-256", "Webhook-Signature"} {
		for _, v := range h[name] {
			for f := range strings.FieldsSeq(v) {
				if len(f) > 8 {
					banned = append(banned, f, f[len(f)-8:])
				}
			}
		}
	}
	for _, b := range banned {
		if strings.Contains(msg, b) {
			t.Errorf("error %q leaks %q", msg, b)
		}
	}
}

func TestStandardWebhooksTolerance(t *testing.T) {
	t.Parallel()
	s := func(now time.Time) *webhook.Signed {
		return &webhook.Signed{Header: stdHdr(swSig), Body: []byte(swBody), Now: now}
	}
	tests := []struct {
		name    string
		tol     time.Duration
		now     time.Time
		wantErr bool
	}{
		{name: "default allows 4m59s", now: swNow.Add(4*time.Minute + 59*time.Second)},
		{name: "default rejects 5m1s", now: swNow.Add(5*time.Minute + time.Second), wantErr: true},
		{name: "negative means default", tol: -time.Second, now: swNow.Add(4 * time.Minute)},
		{name: "custom allows 59s", tol: time.Minute, now: swNow.Add(-59 * time.Second)},
		{name: "custom rejects 61s", tol: time.Minute, now: swNow.Add(61 * time.Second), wantErr: true},
		{name: "custom rejects 61s ahead", tol: time.Minute, now: swNow.Add(-61 * time.Second), wantErr: true},
		{name: "zero now is the wall clock", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := webhook.StandardWebhooks{Tolerance: tt.tol}.Verify([]byte(swSecret), s(tt.now))
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, webhook.ErrBadSignature)) {
				t.Fatalf("Verify = %v, want error %v wrapping ErrBadSignature", err, tt.wantErr)
			}
		})
	}
}

func TestBuiltinsDirect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		v      webhook.Verifier
		secret string
		header http.Header
		errHas string
	}{
		{name: "github missing header", v: webhook.GitHub{}, secret: ghSecret, header: hdr("Webhook-Signature", swSig), errHas: "missing X-Hub-Signature-256"},
		{name: "github empty secret", v: webhook.GitHub{}, header: hdr("X-Hub-Signature-256", ghSig), errHas: "no secret"},
		{name: "standard missing signature", v: webhook.StandardWebhooks{}, secret: swSecret, header: hdr("webhook-id", swID, "webhook-timestamp", swTS), errHas: "missing webhook-signature"},
		{name: "standard empty secret", v: webhook.StandardWebhooks{}, header: stdHdr(swSig), errHas: "no secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.v.Verify([]byte(tt.secret), &webhook.Signed{Header: tt.header, Body: []byte(ghBody), Now: swNow})
			if !errors.Is(err, webhook.ErrBadSignature) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("Verify = %v, want ErrBadSignature containing %q", err, tt.errHas)
			}
		})
	}
}

func TestVerifyEdges(t *testing.T) {
	t.Parallel()
	t.Run("nil payload", func(t *testing.T) {
		t.Parallel()
		if err := webhook.Verify([]byte(ghSecret), nil); !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("Verify(nil) = %v, want ErrBadSignature", err)
		}
	})
	t.Run("host error is wrapped", func(t *testing.T) {
		t.Parallel()
		cause := errors.New("key lookup failed")
		s := &webhook.Signed{Header: hdr("X-Sig", "x")}
		err := webhook.Verify([]byte(ghSecret), s, hostScheme{header: "X-Sig", err: cause})
		if !errors.Is(err, webhook.ErrBadSignature) || !errors.Is(err, cause) {
			t.Fatalf("Verify = %v, want it to wrap ErrBadSignature and the host's error", err)
		}
	})
	t.Run("vectors through the signers", func(t *testing.T) {
		t.Parallel()
		if got := webhook.SignGitHub([]byte(ghSecret), []byte(ghBody)); got != ghSig {
			t.Errorf("SignGitHub = %q, want %q", got, ghSig)
		}
		h := webhook.SignStandard([]byte(swSecret), swID, swNow, []byte(swBody))
		want := stdHdr(swSig)
		for _, k := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
			if h.Get(k) != want.Get(k) || len(h[k]) != 1 {
				t.Errorf("SignStandard %s = %q, want %q", k, h[k], want.Get(k))
			}
		}
	})
	t.Run("signers refuse secrets Verify rejects", func(t *testing.T) {
		t.Parallel()
		if got := webhook.SignGitHub(nil, []byte(ghBody)); got != "" {
			t.Errorf("SignGitHub(empty secret) = %q, want empty", got)
		}
		for _, secret := range []string{"", "whsec_", "whsec_***"} {
			if h := webhook.SignStandard([]byte(secret), swID, swNow, nil); h != nil {
				t.Errorf("SignStandard(%q) = %v, want nil", secret, h)
			}
		}
	})
}

func TestSignRoundTrip(t *testing.T) {
	t.Parallel()
	binary := []byte{0, 1, 2, 0xff, '\n', '.'}
	tests := []struct {
		name   string
		secret string
		body   []byte
	}{
		{name: "json", secret: "czNjcmV0", body: []byte(`{"action":"opened"}`)},
		{name: "empty body", secret: "czNjcmV0", body: nil},
		{name: "binary body", secret: "czNjcmV0", body: binary},
		{name: "long secret hashed by hmac", secret: strings.Repeat("k", 200), body: []byte("x")},
		{name: "whsec secret", secret: swSecret, body: []byte(swBody)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret := []byte(tt.secret)
			gh := &webhook.Signed{Header: hdr("X-Hub-Signature-256", webhook.SignGitHub(secret, tt.body)), Body: tt.body}
			if err := webhook.Verify(secret, gh); err != nil {
				t.Errorf("GitHub round trip: %v", err)
			}
			at := time.Now().Truncate(time.Second)
			sw := &webhook.Signed{Header: webhook.SignStandard(secret, "msg_1", at, tt.body), Body: tt.body}
			if err := webhook.Verify(secret, sw); err != nil {
				t.Errorf("Standard Webhooks round trip (Now unset): %v", err)
			}
			sw.Body = append(bytes.Clone(tt.body), ' ')
			if err := webhook.Verify(secret, sw); !errors.Is(err, webhook.ErrBadSignature) {
				t.Errorf("Standard Webhooks with a changed body = %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestDeliveryID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    http.Header
		want string
	}{
		{name: "github", h: hdr("X-GitHub-Delivery", "72d3162e"), want: "72d3162e"},
		{name: "standard", h: hdr("webhook-id", swID), want: swID},
		{name: "github first", h: hdr("webhook-id", swID, "X-GitHub-Delivery", "72d3162e"), want: "72d3162e"},
		{name: "lower-case keys by hand", h: rawHdr("webhook-id", swID), want: swID},
		{name: "none", h: hdr("X-Request-Id", "r1"), want: ""},
		{name: "nil", h: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := webhook.DeliveryID(tt.h); got != tt.want {
				t.Errorf("DeliveryID = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("k", ghSig, "", "", "", []byte(ghBody), false)
	f.Add(swSecret[6:], "", swID, swTS, swSig, []byte(swBody), true)
	f.Add("k", "sha256=zz", swID, "-1", "v1,==== v1a,x", []byte{}, false)
	f.Add("k", "", "", "9999999999999999999", "v1,"+strings.Repeat("/", 44), []byte("x"), true)
	f.Fuzz(func(t *testing.T, secretTail, ghHeader, id, ts, swHeader string, body []byte, whsec bool) {
		// The secret carries a marker no error text contains, so a leak shows as a substring.
		secret := "\x01" + secretTail
		if whsec {
			secret = "whsec_" + secretTail
		}
		h := rawHdr("x-hub-signature-256", ghHeader, "Webhook-Id", id, "webhook-timestamp", ts, "WEBHOOK-SIGNATURE", swHeader)
		err := webhook.Verify([]byte(secret), &webhook.Signed{Header: h, Body: body, Now: swNow})
		if err == nil {
			if !realSignature(secret, ghHeader, id, ts, swHeader, body) {
				t.Fatalf("Verify accepted a forged signature: %v", h)
			}
			return
		}
		if !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("Verify = %v, want ErrBadSignature", err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q contains the secret", err)
		}
	})
}

// realSignature is the fuzz oracle, computed independently of the package: whether the header the verifier
// looks at carries the correct signature.
func realSignature(secret, ghHeader, id, ts, swHeader string, body []byte) bool {
	if swHeader == "" {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return strings.EqualFold(ghHeader, "sha256="+hex.EncodeToString(m.Sum(nil)))
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return slices.Contains(strings.Fields(swHeader), "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
}

func benchBody() []byte { return bytes.Repeat([]byte(`{"k":"v"},`), 103)[:1024] }

func BenchmarkVerifyGitHub1KB(b *testing.B) {
	secret, body := []byte("bench-secret"), benchBody()
	h := hdr("Accept", "*/*", "Content-Type", "application/json", "User-Agent", "GitHub-Hookshot/044aadd",
		"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event", "issues",
		"X-GitHub-Hook-ID", "292430182", "X-GitHub-Hook-Installation-Target-ID", "79929171",
		"X-GitHub-Hook-Installation-Target-Type", "repository", "X-Hub-Signature", "sha1=0",
		"X-Hub-Signature-256", webhook.SignGitHub(secret, body), "Content-Length", "1024")
	s := &webhook.Signed{Header: h, Body: body}
	b.ReportAllocs()
	for b.Loop() {
		if err := webhook.Verify(secret, s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyStandard1KB(b *testing.B) {
	secret, body := []byte(swSecret), benchBody()
	at := time.Unix(1614265330, 0)
	h := webhook.SignStandard(secret, swID, at, body)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Svix-Webhooks/1.0")
	s := &webhook.Signed{Header: h, Body: body, Now: at}
	b.ReportAllocs()
	for b.Loop() {
		if err := webhook.Verify(secret, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHMACBaseline1KB is the floor: HMAC-SHA256 of the same body and a constant-time compare, nothing else.
func BenchmarkHMACBaseline1KB(b *testing.B) {
	secret, body := []byte("bench-secret"), benchBody()
	want := hmac.New(sha256.New, secret)
	want.Write(body)
	sum := want.Sum(nil)
	b.ReportAllocs()
	for b.Loop() {
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		if !hmac.Equal(m.Sum(nil), sum) {
			b.Fatal("mismatch")
		}
	}
}
