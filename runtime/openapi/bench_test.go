package openapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime/openapi"
)

// BenchmarkLoadLarge loads SendGrid's v3 API description (1.5 MB, 334 operations): cold reads and resolves the
// document every time, cached reuses the process-wide document cache (a second Load of the same URL).
func BenchmarkLoadLarge(b *testing.B) {
	m := []byte("kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		testdata(b, "sendgrid-v3.json") + "\n  base_url: http://api.example\n")
	for _, cold := range []bool{true, false} {
		name := "cached"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if cold {
					openapi.ForgetDocuments()
				}
				if _, err := tool.Load(context.Background(), m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvoke compares one call of an OpenAPI operation (GET /pet/{petId} with a query-less path parameter
// and an Authorization header) with the same request as a stateless_http action and with plain net/http, all
// against the same httptest server.
func BenchmarkInvoke(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":7,"name":"doggie","photoUrls":[]}`)
	}))
	defer srv.Close()
	settings := tool.WithSettings(map[string]any{"base": srv.URL, "token": "tok"})
	client := tool.WithHTTPClient(srv.Client())
	statelessManifest := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: petstore
description: Pets.
settings:
  properties:
    base: {type: string}
    token: {type: string, format: password}
stateless_http:
  headers:
    Authorization: "Bearer {settings.token}"
actions:
  - name: getPetById
    description: Find pet by ID.
    parameters:
      properties:
        petId: {type: integer, format: int64}
    execute:
      stateless_http:
        method: GET
        url: "{settings.base}/v3/pet/{parameters.petId}"
`
	manifests := map[string]string{
		"openapi":        petstoreManifest(testdata(b, "petstore3.json")),
		"stateless_http": statelessManifest,
	}
	args := map[string]any{"petId": 7}
	for _, name := range []string{"openapi", "stateless_http"} {
		b.Run(name, func(b *testing.B) {
			tl, err := tool.Load(context.Background(), []byte(manifests[name]), settings, client)
			if err != nil {
				b.Fatal(err)
			}
			task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer task.Close(context.Background())
			b.ReportAllocs()
			for b.Loop() {
				res, err := task.Invoke(context.Background(), "getPetById", args)
				if err != nil || res.IsError {
					b.Fatal(err, res.Error)
				}
			}
		})
	}
	b.Run("raw", func(b *testing.B) {
		c := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v3/pet/7", nil)
			req.Header.Set("Authorization", "Bearer tok")
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
