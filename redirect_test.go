package tool_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// A redirect to another host is refused without naming that host to the LLM (it may be an internal host:port);
// the redirect response, Location included, is in ServerData for the host.
func TestRefusedRedirectHidesItsTarget(t *testing.T) {
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed to %s", r.URL)
	}))
	t.Cleanup(internal.Close)
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/admin", http.StatusFound)
	}))
	t.Cleanup(public.Close)
	src := manifestHeader("redirects") + `settings:
  properties:
    base_url: {type: string}
actions:
  - name: fetch
    description: Fetches.
    execute:
      stateless_http:
        method: GET
        url: "{settings.base_url}/thing"
`
	task := newTask(t, mustLoadSrc(t, src, tool.WithSettings(map[string]any{"base_url": public.URL})), tool.TaskConfig{})
	res := mustInvoke(t, task, "fetch", nil)
	if !res.IsError || res.Error.Kind != "denied" {
		t.Fatalf("result = %+v, want a recoverable denied error", res.Error)
	}
	target := strings.TrimPrefix(internal.URL, "http://")
	llm, _ := json.Marshal(res.Output)
	for what, text := range map[string]string{"message": res.Error.Message, "output": string(llm), "OutputJSON": string(res.OutputJSON)} {
		if strings.Contains(text, target) {
			t.Errorf("the %s names the redirect target %s: %s", what, target, text)
		}
	}
	headers, _ := res.ServerData["headers"].(map[string][]string)
	if res.ServerData["status"] != http.StatusFound || len(headers["Location"]) != 1 || !strings.Contains(headers["Location"][0], target) {
		t.Errorf("ServerData = %v, want status 302 and the Location", res.ServerData)
	}
}
