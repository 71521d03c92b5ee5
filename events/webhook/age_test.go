package webhook

import (
	"net/http"
	"testing"
	"time"
)

func TestGitHubPayloadTime(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		name    string
		payload any
		want    time.Time
		ok      bool
	}{
		{"issue: the newest object wins", map[string]any{
			"issue":      map[string]any{"updated_at": "2026-11-23T10:00:00Z", "created_at": "2026-01-01T00:00:00Z"},
			"repository": map[string]any{"updated_at": "2025-01-01T00:00:00Z"},
		}, at("2026-11-23T10:00:00Z"), true},
		{"push: pushed_at in unix seconds", map[string]any{
			"repository": map[string]any{"pushed_at": int64(1795000000), "updated_at": "2025-01-01T00:00:00Z"},
		}, time.Unix(1795000000, 0), true},
		{"no times", map[string]any{"zen": "Keep it logically awesome."}, time.Time{}, false},
		{"not an object", "text", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := GitHubPayloadTime(tt.payload)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("%s: GitHubPayloadTime = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIsGitHub(t *testing.T) {
	t.Parallel()
	gh := http.Header{"X-Hub-Signature-256": {"sha256=x"}, "X-Github-Event": {"issues"}}
	std := http.Header{"X-Hub-Signature-256": {"sha256=x"}, "X-Github-Event": {"issues"}, "Webhook-Signature": {"v1,x"}}
	if !IsGitHub(gh) || IsGitHub(std) || IsGitHub(http.Header{"X-Github-Event": {"issues"}}) {
		t.Error("IsGitHub misclassifies")
	}
}
