package mcpauth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// DefaultMaxBytes bounds a response body a Guard's client reads, when Guard.MaxBytes is 0: metadata and token
// responses are a few kilobytes.
const DefaultMaxBytes = 1 << 20

// DefaultTimeout bounds one exchange of a Guard's client, redirects included, when Guard.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// maxRedirects bounds the redirects a Guard's client follows.
const maxRedirects = 5

// ErrRefused is wrapped by the errors of a Guard's client for what its policy refuses: a URL that is not https,
// an address that is not public, a redirect of a POST or to another origin, a response larger than its bound.
var ErrRefused = errors.New("mcpauth: refused by the outbound guard")

// Guard is the policy for requests to URLs a remote party names (SSRF): resource and authorization-server
// metadata, registration, authorization and token endpoints. Its zero value is the strict default. A Guard's
// Client:
//   - sends https only;
//   - connects only to public addresses, checked when it dials (after name resolution, so a name that resolves to
//     a private address is refused too): not loopback, private (RFC 1918, fc00::/7), link-local (which holds
//     169.254.169.254, the usual cloud metadata address), shared (100.64.0.0/10, Alibaba's metadata), multicast,
//     unspecified or reserved ranges; IPv4 inside IPv6 (mapped, NAT64, 6to4) is checked as IPv4;
//   - uses no proxy from the environment (a proxy would dial for it);
//   - follows no redirect of a request that is not GET or HEAD, and no redirect to another origin (scheme, host
//     and port), at most 5;
//   - reads at most MaxBytes of a body, and headers of at most 64 KiB.
type Guard struct {
	// AllowLoopback lets the client connect to loopback addresses (127.0.0.0/8, ::1), and to them over plain
	// http too: for servers on the host's own machine, and for tests. Other addresses stay as strict as without
	// it, and plain http to them stays refused.
	AllowLoopback bool
	// MaxBytes bounds a response body; 0 is DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds one exchange, redirects and reading the body included; 0 is DefaultTimeout. A request's
	// context bounds it too.
	Timeout time.Duration
	// TLSConfig is the TLS configuration of its connections (custom roots, say); nil is Go's default.
	TLSConfig *tls.Config
}

// Client returns an HTTP client that applies g. Each call returns a new client with its own connection pool;
// keep and share it. It is safe for concurrent use.
func (g Guard) Client() *http.Client {
	limit := g.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rt := &guarded{
		https: g.transport(func(a netip.Addr) error { return public(a, g.AllowLoopback) }),
		max:   limit,
	}
	if g.AllowLoopback {
		rt.http = g.transport(loopbackOnly)
	}
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: checkRedirect}
}

// transport returns a transport whose dialer refuses every address allowed does not accept.
func (g Guard) transport(allowed func(netip.Addr) error) *http.Transport {
	d := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: dialing %q: %v", ErrRefused, address, err)
			}
			if err := allowed(ap.Addr()); err != nil {
				return fmt.Errorf("%w: dialing %s: %v", ErrRefused, ap.Addr(), err)
			}
			return nil
		},
	}
	var tc *tls.Config
	if g.TLSConfig != nil {
		tc = g.TLSConfig.Clone()
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        tc,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
	}
}

// checkRedirect follows a redirect only of a GET or HEAD, only within the first request's origin.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	switch {
	case first.Method != http.MethodGet && first.Method != http.MethodHead:
		return fmt.Errorf("%w: a redirect of a %s request", ErrRefused, first.Method)
	case req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host:
		return fmt.Errorf("%w: a redirect to another origin", ErrRefused)
	case len(via) >= maxRedirects:
		return fmt.Errorf("%w: more than %d redirects", ErrRefused, maxRedirects)
	}
	return nil
}

// guarded sends https requests, and http ones when it has a transport for them (loopback only).
type guarded struct {
	https, http *http.Transport
	max         int64
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	t := g.https
	switch {
	case req.URL.User != nil:
		return nil, closeBody(req, fmt.Errorf("%w: a URL with credentials", ErrRefused))
	case req.URL.Scheme == "http" && g.http != nil:
		t = g.http
	case req.URL.Scheme != "https":
		return nil, closeBody(req, fmt.Errorf("%w: the scheme %q (https only)", ErrRefused, req.URL.Scheme))
	}
	resp, err := t.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > g.max {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: a response of %d bytes (the bound is %d)", ErrRefused, resp.ContentLength, g.max)
	}
	resp.Body = &bounded{ReadCloser: resp.Body, left: g.max}
	return resp, nil
}

// closeBody closes the body of a request that is not sent, as a RoundTripper must.
func closeBody(req *http.Request, err error) error {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return err
}

// bounded fails a read past its bound, rather than truncating the body silently.
type bounded struct {
	io.ReadCloser
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: a response body over its bound", ErrRefused)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// notPublic are the IPv4 and IPv6 ranges that are not public beyond what netip's predicates tell: shared address
// space (carrier NAT; Alibaba Cloud's metadata is 100.100.100.200), IETF protocol assignments (192.0.0.192 is a
// metadata address of some clouds), documentation, benchmarking, reserved, and IPv6 discard and documentation.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fec0::/10"),
}

// IPv6 prefixes that carry an IPv4 address, which is checked instead: NAT64 (RFC 6052, RFC 8215) and 6to4.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// public returns nil when a is a public address (or loopback, with loopback allowed), else why it is not.
func public(a netip.Addr, loopback bool) error {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return public(netip.AddrFrom4([4]byte(b[12:16])), loopback)
		case sixToFour.Contains(a):
			return public(netip.AddrFrom4([4]byte(b[2:6])), loopback)
		case nat64Local.Contains(a):
			return errors.New("a local-use NAT64 address")
		}
	}
	switch {
	case a.IsLoopback():
		if loopback {
			return nil
		}
		return errors.New("a loopback address")
	case a.IsPrivate():
		return errors.New("a private address")
	case a.IsLinkLocalUnicast():
		return errors.New("a link-local address (cloud metadata lives there)")
	case a.IsUnspecified(), a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return errors.New("not a unicast address")
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return errors.New("the broadcast address")
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return fmt.Errorf("a reserved address (%s)", p)
		}
	}
	return nil
}

// loopbackOnly accepts loopback addresses only: where plain http may go.
func loopbackOnly(a netip.Addr) error {
	if a.Unmap().IsLoopback() {
		return nil
	}
	return errors.New("plain http goes to loopback addresses only")
}
