package tool_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// Regression: an LLM-supplied format: password parameter is masked in tool.started but not in the tool.failed fact,
// the Result error or ServerData.
func TestRegressionSecretParamHTTPLeak(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "bad key "+r.URL.Query().Get("key"))
	})
	rec := &factRecorder{}
	tl := mustLoadSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: p
description: x
settings:
  properties:
    base: {type: string}
actions:
  - name: get
    description: x
    parameters:
      properties:
        key: {type: string, format: password}
    execute:
      stateless_http:
        method: GET
        url: "{settings.base}/x?key={parameters.key}"
`, tool.WithSettings(map[string]any{"base": srv.URL}), tool.WithObserver(rec))
	task := newTask(t, tl, tool.TaskConfig{})
	mustInvoke(t, task, "get", map[string]any{"key": "sk-PARAM-SECRET"})
	for _, f := range rec.all() {
		s := fmt.Sprintf("%+v", f.Data)
		t.Logf("%s: %s", f.Name, s)
		if strings.Contains(s, "sk-PARAM-SECRET") {
			t.Errorf("fact %s holds the secret parameter value", f.Name)
		}
	}
}
