package webhook

import (
	"net/http"
	"time"
)

// IsGitHub reports whether h is a GitHub delivery: it carries X-Hub-Signature-256 and an X-GitHub-Event or
// X-GitHub-Delivery header, and no Standard Webhooks signature (whose signed timestamp already bounds replays).
func IsGitHub(h http.Header) bool {
	return (GitHub{}).Applies(h) && !(StandardWebhooks{}).Applies(h) &&
		(header(h, "X-Github-Event") != "" || header(h, headerGitHubDelivery) != "")
}

// GitHubPayloadTime returns the newest time a GitHub webhook payload states about the change it reports: the
// updated_at, created_at, submitted_at, completed_at or published_at (RFC 3339) of each top-level object, such as
// the issue, comment, pull request, review or release, and repository.pushed_at (unix seconds, the time of a
// push). The signature covers the payload, so a replay cannot make it newer. ok is false when the payload states
// no such time (then its age is unknown).
func GitHubPayloadTime(payload any) (newest time.Time, ok bool) {
	top, _ := payload.(map[string]any)
	for _, v := range top {
		obj, _ := v.(map[string]any)
		for _, key := range []string{"updated_at", "created_at", "submitted_at", "completed_at", "published_at", "pushed_at"} {
			var t time.Time
			switch x := obj[key].(type) {
			case string:
				t, _ = time.Parse(time.RFC3339, x)
			case int64:
				t = time.Unix(x, 0)
			case float64:
				t = time.Unix(int64(x), 0)
			}
			if !t.IsZero() && t.After(newest) {
				newest, ok = t, true
			}
		}
	}
	return newest, ok
}
