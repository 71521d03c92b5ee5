package tool

import (
	"context"

	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/mcpauth"
)

// maskingAuthorizer is the task's MCPAuthorizer as the backends see it: every token it gives joins the task's
// secrets before it is sent, so that a server echoing it, or an error quoting it, is masked.
type maskingAuthorizer struct {
	mcpauth.Authorizer
	secrets *redact.Set
}

func (m maskingAuthorizer) Token(ctx context.Context, s mcpauth.Server) (string, error) {
	tok, err := m.Authorizer.Token(ctx, s)
	if tok != "" {
		m.secrets.AddToken(tok)
	}
	return tok, err
}
