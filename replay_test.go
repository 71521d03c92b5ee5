package tool_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// Limits.GitHubMaxAge refuses a GitHub delivery whose payload's own (signed) timestamps are older than the limit:
// a replay with a fresh X-GitHub-Delivery id passes the signature and the dedupe window, not this.
func TestGitHubMaxAge(t *testing.T) {
	clock := newManualClock()
	now := clock.Now()
	tl := repoTool(t, tool.WithLimits(tool.Limits{GitHubMaxAge: 10 * time.Minute}), tool.WithClock(clock))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	push := func(at time.Time) string {
		return fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"full_name":"o/r","pushed_at":%d,"updated_at":"2020-01-01T00:00:00Z"}}`, at.Unix())
	}
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-1", push(now.Add(-time.Minute)))), "pushed:activated", "labeled:empty_allow_list")

	old := deliver(t, task, signed(hookSecret, "d-2", push(now.Add(-time.Hour))))
	wantOutcome(t, old, "pushed:bad_signature", "labeled:bad_signature")
	if !strings.Contains(old.Discarded[0].Detail, "1h0m0s old") {
		t.Errorf("detail = %q, want the age named", old.Discarded[0].Detail)
	}
	// A payload that states no time is not refused.
	wantOutcome(t, deliver(t, task, signed(hookSecret, "d-3", pushBody)), "pushed:activated", "labeled:empty_allow_list")

	// Without the option, the old payload activates.
	plain := newTask(t, repoTool(t, tool.WithClock(clock)), tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
	wantOutcome(t, deliver(t, plain, signed(hookSecret, "d-2", push(now.Add(-time.Hour)))), "pushed:activated", "labeled:empty_allow_list")
}
