package resource_test

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/commonagents-go/tool/mcpserve/resource"
)

// BenchmarkDoor: calls of a cel action over streamable HTTP through mcpserve's SessionHandler, 8 in flight, behind
// a static bearer compared in constant time (serve-mcp --token-env) and behind the protected resource checking a
// JWT against its issuer's key set (serve-mcp --resource-url), sub-benchmarks alternated in one process. Run with
// -count 10 and compare the two: the JWT check's cost per call.
func BenchmarkDoor(b *testing.B) {
	ctx := context.Background()
	tl, err := tool.LoadFile(ctx, filepath.Join("..", "..", "scripts", "shout.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	is := newIssuer(b)
	s, err := resource.New(resource.Config{Resource: resourceURL, Issuers: []string{is.URL}, Scopes: []string{"mcp:tools"},
		Client: mcpauth.Guard{AllowLoopback: true}.Client(), Now: time.Now})
	if err != nil {
		b.Fatal(err)
	}
	claims := goodClaims(is)
	claims["exp"], claims["iat"] = time.Now().Add(time.Hour).Unix(), time.Now().Unix()
	jwtToken := token(b, jose.ES256, is.ec, "e1", claims, map[jose.HeaderKey]any{jose.HeaderType: "at+jwt"})
	const static = "a-static-token-of-32-characters!"
	want := sha256.Sum256([]byte("Bearer " + static))
	bearer := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	for _, door := range []struct {
		name, token string
		wrap        func(http.Handler) http.Handler
	}{{"token-env", static, bearer}, {"jwt", jwtToken, s.Handler}} {
		b.Run(door.name, func(b *testing.B) {
			sessions := mcpserve.Handler(tl, func(ctx context.Context) (*tool.Task, error) {
				return tl.NewTask(ctx, tool.TaskConfig{})
			}, mcpserve.SessionConfig{})
			defer sessions.Close(ctx)
			srv := httptest.NewServer(door.wrap(sessions))
			defer srv.Close()
			c, err := mcpclient.NewStreamableHttpClient(srv.URL,
				transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + door.token}))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4) // 8 callers on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := mcp.CallToolRequest{}
				req.Params.Name = "shout"
				req.Params.Arguments = map[string]any{"name": "ada"}
				for pb.Next() {
					if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
						b.Fatalf("%v %+v", err, res)
					}
				}
			})
		})
	}
}
