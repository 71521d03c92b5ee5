package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	facts_ "github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/mcpauth"
)

// reporting is an Authorizer that reports, as mcpauth.Client does, a secret it handled (a PKCE verifier, say) and
// a fact that carelessly holds it, through the mcpauth.Reporter in the context of its calls.
type reporting struct {
	grants
	secret string
}

func (r *reporting) Challenge(ctx context.Context, s mcpauth.Server, c mcpauth.Challenge) error {
	rep := mcpauth.ReporterFrom(ctx)
	if rep.Secret == nil || rep.Fact == nil {
		return fmt.Errorf("no Reporter in the Challenge's context: %+v", rep)
	}
	rep.Secret(r.secret)
	rep.Fact(facts_.MCPAuthorizationRequired, map[string]any{"server": s.Name, "careless": "verifier " + r.secret})
	return r.grants.Challenge(ctx, s, c)
}

// The task gives its Authorizer a Reporter: a secret reported through it joins the task's secrets, and a fact
// reported through it is the task's, of the call, with the secret masked.
func TestAuthorizerReportsThroughTheTask(t *testing.T) {
	t.Parallel()
	p := newProtected(t, "streamable_http", "mcp:basic")
	a := &reporting{grants: grants{next: []string{tokBasic}}, secret: "verifier-canary-0123456789"}
	obs := &facts{}
	task := authTask(t, whoamiManifest("  transport: streamable_http\n  url: "+p.url("")+"\n"), a, tool.WithObserver(obs))
	res, err := task.Invoke(context.Background(), "whoami", nil)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res.Error)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	found := false
	for _, f := range obs.all {
		if f.Name != facts_.MCPAuthorizationRequired {
			continue
		}
		found = true
		if f.TaskID != task.ID() || f.CallID != res.CallID {
			t.Errorf("the fact is of task %q call %q, want %q %q", f.TaskID, f.CallID, task.ID(), res.CallID)
		}
		if s := fmt.Sprint(f.Data); strings.Contains(s, a.secret) || !strings.Contains(s, "verifier") {
			t.Errorf("the fact's data %s: want the reported secret masked", s)
		}
	}
	if !found {
		t.Errorf("the Authorizer's fact was not reported as the task's")
	}
}
