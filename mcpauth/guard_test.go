package mcpauth_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool/mcpauth"
)

// hits is a handler that counts the requests it received and answers with body.
type hits struct {
	n    atomic.Int32
	body string
}

func (h *hits) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.n.Add(1)
	_, _ = io.WriteString(w, h.body)
}

// tlsOf returns the TLS configuration that trusts srv's certificate.
func tlsOf(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// The default refuses a loopback listener when it dials, whether the URL names the address or a name that
// resolves to it; AllowLoopback lets the same requests through, over https and plain http.
func TestGuardLoopback(t *testing.T) {
	t.Parallel()
	h := &hits{body: "ok"}
	tsrv := httptest.NewTLSServer(h)
	t.Cleanup(tsrv.Close)
	psrv := httptest.NewServer(h)
	t.Cleanup(psrv.Close)
	byName := strings.Replace(tsrv.URL, "127.0.0.1", "localhost", 1)

	strict := mcpauth.Guard{TLSConfig: tlsOf(tsrv)}.Client()
	for _, u := range []string{tsrv.URL, byName, psrv.URL} {
		if _, err := get(strict, u); !errors.Is(err, mcpauth.ErrRefused) {
			t.Errorf("GET %s by default: %v, want ErrRefused", u, err)
		}
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("the listener received %d requests, want none", n)
	}

	loose := mcpauth.Guard{AllowLoopback: true, TLSConfig: tlsOf(tsrv)}.Client()
	for _, u := range []string{tsrv.URL, psrv.URL} {
		if body, err := get(loose, u); err != nil || body != "ok" {
			t.Errorf("GET %s with AllowLoopback: %q, %v", u, body, err)
		}
	}
}

// privateAddr returns an address of this machine that is neither loopback nor public (a container's usual
// 10.x or 172.x address), or skips the test.
func privateAddr(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && (n.IP.IsPrivate() || n.IP.IsLinkLocalUnicast()) && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no private IPv4 address to listen on")
	return ""
}

// A listener on a private address is refused even with AllowLoopback, over https and over plain http.
func TestGuardRefusesPrivateListener(t *testing.T) {
	t.Parallel()
	ip := privateAddr(t)
	h := &hits{body: "ok"}
	for _, tls := range []bool{true, false} {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Skip(err)
		}
		srv := httptest.NewUnstartedServer(h)
		srv.Listener = l
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
		c := mcpauth.Guard{AllowLoopback: true, TLSConfig: tlsOf(srv)}.Client()
		if _, err := get(c, srv.URL); !errors.Is(err, mcpauth.ErrRefused) {
			t.Errorf("GET %s: %v, want ErrRefused", srv.URL, err)
		}
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("the private listener received %d requests, want none", n)
	}
}

// Plain http to a loopback listener is refused without AllowLoopback before anything is dialed, and so is a URL
// with credentials.
func TestGuardHTTPSOnly(t *testing.T) {
	t.Parallel()
	h := &hits{}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "http://", "ftp://", 1)} {
		if _, err := get(mcpauth.Guard{}.Client(), u); !errors.Is(err, mcpauth.ErrRefused) {
			t.Errorf("GET %s: %v, want ErrRefused", u, err)
		}
	}
	withUser := strings.Replace(srv.URL, "http://", "http://user:pw@", 1)
	if _, err := get(mcpauth.Guard{AllowLoopback: true}.Client(), withUser); !errors.Is(err, mcpauth.ErrRefused) {
		t.Errorf("GET with credentials in the URL: %v, want ErrRefused", err)
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("the listener received %d requests, want none", n)
	}
}

// A GET is redirected within its origin; a POST is not redirected at all, nor is a GET to another origin.
func TestGuardRedirects(t *testing.T) {
	t.Parallel()
	other := &hits{body: "other"}
	osrv := httptest.NewServer(other)
	t.Cleanup(osrv.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/there", http.StatusFound) })
	mux.HandleFunc("/there", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "there") })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, osrv.URL+"/x", http.StatusFound)
	})
	posted := &hits{}
	mux.Handle("/posted", posted)
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/posted", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := mcpauth.Guard{AllowLoopback: true}.Client()

	if body, err := get(c, srv.URL+"/here"); err != nil || body != "there" {
		t.Errorf("same-origin redirect: %q, %v", body, err)
	}
	if _, err := get(c, srv.URL+"/away"); !errors.Is(err, mcpauth.ErrRefused) {
		t.Errorf("redirect to another origin: %v, want ErrRefused", err)
	}
	resp, err := c.Post(srv.URL+"/post", "application/x-www-form-urlencoded", strings.NewReader("code=x"))
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, mcpauth.ErrRefused) {
		t.Errorf("redirected POST: %v, want ErrRefused", err)
	}
	if other.n.Load() != 0 || posted.n.Load() != 0 {
		t.Errorf("a refused redirect was followed: other origin %d, POST target %d", other.n.Load(), posted.n.Load())
	}
}

// A body over MaxBytes fails, whether the server declares its length or streams it.
func TestGuardBoundsBodies(t *testing.T) {
	t.Parallel()
	const limit = 100
	mux := http.NewServeMux()
	mux.HandleFunc("/declared", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", limit+1))
	})
	mux.HandleFunc("/streamed", func(w http.ResponseWriter, r *http.Request) {
		for range limit + 1 {
			_, _ = io.WriteString(w, "x")
			http.NewResponseController(w).Flush() // chunked: no length known in advance
		}
	})
	mux.HandleFunc("/fits", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", limit))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := mcpauth.Guard{AllowLoopback: true, MaxBytes: limit}.Client()
	for _, path := range []string{"/declared", "/streamed"} {
		if _, err := get(c, srv.URL+path); !errors.Is(err, mcpauth.ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", path, err)
		}
	}
	if body, err := get(c, srv.URL+"/fits"); err != nil || len(body) != limit {
		t.Errorf("a body of exactly the bound: %d bytes, %v", len(body), err)
	}
}

// Addresses that are not public are refused when dialed, before any packet leaves: the cloud metadata address,
// a private one, the IPv6 metadata address, each given literally.
func TestGuardRefusesAtDial(t *testing.T) {
	t.Parallel()
	c := mcpauth.Guard{AllowLoopback: true}.Client()
	for _, u := range []string{
		"https://169.254.169.254/latest/meta-data/",
		"https://10.0.0.1/.well-known/oauth-authorization-server",
		"https://[fd00:ec2::254]/",
		"https://100.100.100.200/latest/meta-data/",
		"http://192.168.0.1/", // plain http goes to loopback only
	} {
		_, err := get(c, u)
		if !errors.Is(err, mcpauth.ErrRefused) {
			t.Errorf("GET %s: %v, want ErrRefused", u, err)
		}
	}
}
