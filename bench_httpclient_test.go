package tool_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// BenchmarkConcurrentInvoke runs a stateless_http GET from 8 goroutines (SetParallelism over GOMAXPROCS) through
// net/http's default transport (what Load used before: 2 idle connections per host) and through NewHTTPClient, over
// plain HTTP/1.1 and over TLS (HTTP/2 where the client negotiates it), against a backend that answers after 1 ms.
// conns/op counts the connections the server accepted per call.
func BenchmarkConcurrentInvoke(b *testing.B) {
	ctx := context.Background()
	for _, tlsOn := range []bool{false, true} {
		var opened atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(time.Millisecond) // a backend's latency, so that the 8 calls overlap
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"text":"page"}`))
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				opened.Add(1)
			}
		}
		proto := "http1"
		if tlsOn {
			srv.EnableHTTP2 = true
			srv.StartTLS()
			proto = "tls"
		} else {
			srv.Start()
		}
		clients := map[string]func() *http.Client{
			"old-default": func() *http.Client {
				return &http.Client{Transport: withRoots(http.DefaultTransport.(*http.Transport).Clone(), srv)}
			},
			"new-default": func() *http.Client {
				c := tool.NewHTTPClient(0)
				c.Transport = withRoots(c.Transport.(*http.Transport), srv)
				return c
			},
		}
		for _, name := range []string{"old-default", "new-default"} {
			b.Run(proto+"/"+name, func(b *testing.B) {
				client := clients[name]()
				defer client.CloseIdleConnections()
				tl, err := tool.LoadFile(ctx, "testdata/ok/pages.yaml", tool.WithHTTPClient(client),
					tool.WithSettings(map[string]any{"base_url": srv.URL}))
				if err != nil {
					b.Fatal(err)
				}
				task, err := tl.NewTask(ctx, tool.TaskConfig{})
				if err != nil {
					b.Fatal(err)
				}
				defer task.Close(ctx)
				before := opened.Load()
				b.SetParallelism(4)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						res, err := task.Invoke(ctx, "read", nil)
						if err != nil || res.IsError {
							b.Errorf("read: %v %+v", err, res)
							return
						}
					}
				})
				b.ReportMetric(float64(opened.Load()-before)/float64(b.N), "conns/op")
			})
		}
		srv.Close()
	}
}

// withRoots makes t trust srv's certificate (a no-op for a plain server).
func withRoots(t *http.Transport, srv *httptest.Server) *http.Transport {
	if srv.TLS != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	return t
}
