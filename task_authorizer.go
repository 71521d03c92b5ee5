package tool

import (
	"context"

	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/mcpauth"
)

// maskingAuthorizer is the task's MCPAuthorizer as the backends see it: every token it gives joins the task's
// secrets before it is sent, so that a server echoing it, or an error quoting it, is masked. Its calls carry an
// mcpauth.Reporter, through which an Authorizer (mcpauth.Client) adds the other secrets it handles for the task
// (refresh tokens, codes, verifiers, state, client secrets) and reports its facts as the task's.
type maskingAuthorizer struct {
	mcpauth.Authorizer
	secrets *redact.Set
	task    *Task
}

func (m maskingAuthorizer) Token(ctx context.Context, s mcpauth.Server) (string, error) {
	tok, err := m.Authorizer.Token(m.reporting(ctx, s), s)
	if tok != "" {
		m.secrets.AddToken(tok)
	}
	return tok, err
}

func (m maskingAuthorizer) Challenge(ctx context.Context, s mcpauth.Server, c mcpauth.Challenge) error {
	return m.Authorizer.Challenge(m.reporting(ctx, s), s, c)
}

// reporting returns ctx with the task's Reporter for a request of s.
func (m maskingAuthorizer) reporting(ctx context.Context, s mcpauth.Server) context.Context {
	r := mcpauth.Reporter{Secret: m.secrets.AddToken}
	if m.task != nil {
		r.Fact = func(name string, data map[string]any) { m.task.observe(ctx, name, s.CallID, data) }
	}
	return mcpauth.ContextWithReporter(ctx, r)
}
