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
		// The target can be an internal host:port the LLM must not learn: the message does not name it. Do
		// returns the redirect response, so its Location reaches the host's ServerData only.
		return runtime.Errorf(runtime.KindDenied, "the server redirected the request to another scheme or host: "+
			"refused, only same scheme and host redirects are followed")
	}
	if len(via) >= MaxRedirects {
		return runtime.Errorf(runtime.KindDenied, "stopped after %d redirects", MaxRedirects)
	}
	return nil
}
