package httpspec

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/commonagents-go/tool/runtime"
)

func get(t *testing.T, ctx context.Context, client *http.Client, u string, limit int64) (*Response, error) {
	t.Helper()
	req, err := compiled(t, "GET", u, nil, nil).Build(ctx, roots{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return Do(ctx, client, req, limit)
}

func TestDoStatus(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	long := strings.Repeat("é", 600) // 1,200 bytes: the excerpt must cut at a rune boundary
	tests := []struct {
		status     int
		retryAfter string
		body       string
		kind       string
		retryable  bool
		after      [2]time.Duration // RetryAfter within [min, max]
	}{
		{400, "", `{"error":"bad field"}`, runtime.KindInvalidRequest, false, [2]time.Duration{}},
		{401, "", "no", runtime.KindInvalidRequest, false, [2]time.Duration{}},
		{404, "", long, runtime.KindInvalidRequest, false, [2]time.Duration{}},
		{429, "7", "slow down", runtime.KindRateLimited, true, [2]time.Duration{7 * time.Second, 7 * time.Second}},
		{429, date, "", runtime.KindRateLimited, true, [2]time.Duration{80 * time.Second, 91 * time.Second}},
		{429, "soon", "", runtime.KindRateLimited, true, [2]time.Duration{}},
		{500, "", "boom", runtime.KindUnavailable, true, [2]time.Duration{}},
		{503, "3", "", runtime.KindUnavailable, true, [2]time.Duration{3 * time.Second, 3 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			resp, err := get(t, context.Background(), srv.Client(), srv.URL+"/x?token=SECRET", 0)
			rerr := Recoverable(err)
			if rerr == nil {
				t.Fatalf("err = %v, want recoverable", err)
			}
			if rerr.Kind != tc.kind || rerr.Status != tc.status || rerr.Retryable != tc.retryable {
				t.Errorf("error = %+v, want kind %s status %d retryable %v", rerr, tc.kind, tc.status, tc.retryable)
			}
			if rerr.RetryAfter < tc.after[0] || rerr.RetryAfter > tc.after[1] {
				t.Errorf("RetryAfter = %v, want within %v", rerr.RetryAfter, tc.after)
			}
			if !strings.Contains(rerr.Message, http.StatusText(tc.status)) || !strings.Contains(rerr.Message, "HTTP ") {
				t.Errorf("message %q does not carry the status", rerr.Message)
			}
			if strings.Contains(rerr.Message, "SECRET") {
				t.Errorf("message %q carries the query", rerr.Message)
			}
			if !utf8.ValidString(rerr.Message) || len(rerr.Message) > ExcerptLimit+64 {
				t.Errorf("message is %d bytes or invalid UTF-8", len(rerr.Message))
			}
			if excerpt := tc.body[:min(len(tc.body), 100)]; tc.body != "" && !strings.Contains(rerr.Message, excerpt) {
				t.Errorf("message %q lacks the body excerpt", rerr.Message)
			}
			if resp == nil || resp.Status != tc.status || string(resp.Raw) != tc.body {
				t.Errorf("response = %+v, want status and raw body", resp)
			}
		})
	}
}

func TestDoBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ctype, body string
		want              any
	}{
		{"object", "application/json", `{"a":1,"b":[true,null],"c":1.5,"big":123456789012345678901234}`,
			map[string]any{"a": int64(1), "b": []any{true, nil}, "c": 1.5, "big": json.Number("123456789012345678901234")}},
		{"json without content type", "", `[1, "x"]`, []any{int64(1), "x"}},
		{"text", "text/plain", "hello", "hello"},
		{"trailing data is text", "application/json", `{"a":1} {"b":2}`, `{"a":1} {"b":2}`},
		{"empty", "application/json", "", nil},
		{"invalid utf-8 text", "text/plain", "a\xffb", "a\uFFFDb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header()["Content-Type"] = []string{tc.ctype}
				_, _ = io.WriteString(w, tc.body)
			})
			resp, err := get(t, context.Background(), srv.Client(), srv.URL, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Body, tc.want) {
				t.Errorf("Body = %#v, want %#v", resp.Body, tc.want)
			}
			if resp.Size != int64(len(tc.body)) || resp.Status != 200 {
				t.Errorf("Size, Status = %d, %d", resp.Size, resp.Status)
			}
		})
	}
}

func TestDoLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	tests := []struct {
		name    string
		size    int
		chunked bool
		tooBig  bool
		status  int
	}{
		{"at the limit", limit, false, false, 200},
		{"over the limit with content length", limit + 1, false, true, 200},
		{"over the limit chunked", limit + 1, true, true, 200},
		{"far over chunked", 50 * limit, true, true, 200},
		{"error status over the limit keeps its status", 50 * limit, false, false, 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
				body := `"` + strings.Repeat("x", tc.size-2) + `"`
				w.WriteHeader(tc.status)
				if tc.chunked {
					_, _ = io.WriteString(w, body[:10])
					w.(http.Flusher).Flush()
					body = body[10:]
				}
				_, _ = io.WriteString(w, body)
			})
			resp, err := get(t, context.Background(), srv.Client(), srv.URL, limit)
			rerr := Recoverable(err)
			if tc.tooBig {
				if rerr == nil || rerr.Kind != runtime.KindResultTooLarge {
					t.Fatalf("err = %v, want result_too_large", err)
				}
				return
			}
			if tc.status >= 400 {
				if rerr == nil || rerr.Kind != runtime.KindUnavailable || rerr.Status != tc.status || resp.Size != limit {
					t.Fatalf("err = %v, size = %d; want unavailable %d with %d bytes read", err, resp.Size, tc.status, limit)
				}
				return
			}
			if err != nil || resp.Size != limit {
				t.Fatalf("err = %v, size = %d", err, resp.Size)
			}
		})
	}
}

func TestDoTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := get(t, ctx, srv.Client(), srv.URL, 0)
	if rerr := Recoverable(err); rerr == nil || rerr.Kind != runtime.KindTimeout || !rerr.Retryable {
		t.Errorf("deadline: err = %v, want recoverable timeout", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err = get(t, ctx, srv.Client(), srv.URL, 0)
	if !errors.Is(err, context.Canceled) || Recoverable(err) != nil || errors.Is(err, runtime.ErrUnrecoverable) {
		t.Errorf("cancel: err = %v, want a cancellation that is neither recoverable nor unrecoverable", err)
	}

	client := *srv.Client()
	client.Timeout = 50 * time.Millisecond
	_, err = get(t, context.Background(), &client, srv.URL, 0)
	if rerr := Recoverable(err); rerr == nil || rerr.Kind != runtime.KindTimeout {
		t.Errorf("client timeout: err = %v, want recoverable timeout", err)
	}
}

func TestDoUnreachableIsUnrecoverable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}
	tests := []struct {
		name, url string
		client    *http.Client
		host      string
	}{
		{"connection refused", closed.URL + "/x?key=SECRET", http.DefaultClient, strings.TrimPrefix(closed.URL, "http://")},
		{"dns failure", "http://no-such-host.invalid/x?key=SECRET", http.DefaultClient, "no-such-host.invalid"},
		{"tls failure", tlsSrv.URL + "/x?key=SECRET", plain, strings.TrimPrefix(tlsSrv.URL, "https://")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := get(t, ctx, tc.client, tc.url, 0)
			if !errors.Is(err, runtime.ErrUnrecoverable) {
				t.Fatalf("err = %v, want unrecoverable", err)
			}
			if !strings.Contains(err.Error(), tc.host) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("err = %q, want the host and not the query", err)
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	other := newRecorder(t, jsonReply(`"other"`))
	var srv *recorder
	srv = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/same":
			http.Redirect(w, r, "/final?x=1", http.StatusFound)
		case r.URL.Path == "/cross":
			http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
		case r.URL.Path == "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			jsonReply(`"final"`)(w, r)
		}
	})
	tests := []struct {
		name   string
		client *http.Client
		path   string
		denied bool
	}{
		{"same host followed", SameHostRedirects(srv.Client()), "/same", false},
		{"cross host refused", SameHostRedirects(srv.Client()), "/cross", true},
		{"endless loop stopped", SameHostRedirects(srv.Client()), "/loop", true},
		{"disabled", NoRedirects(srv.Client()), "/same", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := get(t, context.Background(), tc.client, srv.URL+tc.path, 0)
			if tc.denied {
				if rerr := Recoverable(err); rerr == nil || rerr.Kind != runtime.KindDenied {
					t.Fatalf("err = %v, want recoverable denied", err)
				}
				return
			}
			if err != nil || resp.Body != "final" {
				t.Fatalf("resp, err = %+v, %v", resp, err)
			}
		})
	}
	if n := len(other.All()); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}
	if srv.Client().CheckRedirect != nil {
		t.Error("SameHostRedirects changed the client it was given")
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"-5", 0}, {"120", 2 * time.Minute}, {" 3 ", 3 * time.Second}, {"1e3", 0},
		{"Mon, 02 Nov 2026 10:01:00 GMT", time.Minute}, {"Mon, 02 Nov 2026 09:00:00 GMT", 0}, {"tomorrow", 0},
	}
	for _, tc := range tests {
		if got := RetryAfter(tc.in, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"  short  ", 10, "short"},
		{"abcdef", 3, "abc…"},
		{"ab€", 4, "ab…"}, // € is 3 bytes: a cut inside it drops it
		{"a\xffb", 10, "a\uFFFDb"},
	}
	for _, tc := range tests {
		if got := Excerpt([]byte(tc.in), tc.max); got != tc.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
