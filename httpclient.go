package tool

import (
	"net"
	"net/http"
	"time"
)

// defaultConnsPerHost is how many idle connections per host the default HTTP client keeps: as many as the calls
// an MCP host runs at once (mcpserve.DefaultWorkers), so that concurrent calls to one backend reuse connections
// instead of opening new ones (net/http's own default keeps 2).
const defaultConnsPerHost = 32

// NewHTTPClient returns an HTTP client tuned for concurrent calls; Load uses NewHTTPClient(0) when the host passes
// no WithHTTPClient. Its transport keeps connsPerHost idle connections per host (defaultConnsPerHost when
// connsPerHost ≤ 0) and four times as many in all, holds TCP connections open with keep-alive probes, speaks
// HTTP/2 over TLS (ForceAttemptHTTP2: a transport with its own dialer needs it), takes proxies from the
// environment and bounds dialing and TLS handshakes. It has no client-wide timeout: each call is bounded by its
// own (the action's timeout, else Limits.CallTimeout).
//
// The default client belongs to the Tool: its idle connections are closed when the last open task of the Tool
// ends, so none outlives the tasks that used it. A client passed with WithHTTPClient stays the host's to tune and
// to close.
func NewHTTPClient(connsPerHost int) *http.Client {
	if connsPerHost <= 0 {
		connsPerHost = defaultConnsPerHost
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * connsPerHost,
		MaxIdleConnsPerHost:   connsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// taskEnded counts a task out; when it was the Tool's last open one, the default client's idle connections are
// closed, so that no connection (and no goroutine serving it) outlives the tasks.
func (t *Tool) taskEnded() {
	if t.openTasks.Add(-1) == 0 && t.opts.ownClient {
		t.opts.httpClient.CloseIdleConnections()
	}
}
