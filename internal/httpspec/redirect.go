package httpspec

import (
	"net/http"
	"strings"

	"github.com/commonagents-go/tool/runtime"
)

// MaxRedirects is how many redirects SameHostRedirects follows for one request.
const MaxRedirects = 10

// SameHostRedirects returns a shallow copy of c (http.DefaultClient when nil) that follows redirects only to the
// scheme and host of the original request, at most MaxRedirects of them (SPEC §4.4). Do reports any other
// redirect as a recoverable denied error.
func SameHostRedirects(c *http.Client) *http.Client {
	return withPolicy(c, sameHost)
}

// NoRedirects returns a shallow copy of c (http.DefaultClient when nil) that follows no redirect: Do reports a
// redirect as a recoverable denied error.
func NoRedirects(c *http.Client) *http.Client {
	return withPolicy(c, func(*http.Request, []*http.Request) error {
		return runtime.Errorf(runtime.KindDenied, "the server redirected the request and redirects are disabled")
	})
}

func withPolicy(c *http.Client, check func(*http.Request, []*http.Request) error) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cp := *c
	cp.CheckRedirect = check
	return &cp
}

func sameHost(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
		// Hosts are not secrets; paths and queries may be, so they stay out.
		return runtime.Errorf(runtime.KindDenied, "redirect from %s://%s to %s://%s refused: only same scheme and host redirects are followed",
			first.Scheme, first.Host, req.URL.Scheme, req.URL.Host)
	}
	if len(via) >= MaxRedirects {
		return runtime.Errorf(runtime.KindDenied, "stopped after %d redirects", MaxRedirects)
	}
	return nil
}
