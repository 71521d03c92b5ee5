package tool

import "context"

// AuthRequest describes what a token is for.
type AuthRequest struct {
	Tool, Task, Action, Event string
}

// AuthProvider supplies tokens for {auth.<provider>()} (SPEC §10). It must be safe for concurrent use.
type AuthProvider interface {
	Token(ctx context.Context, provider string, req AuthRequest) (string, error)
}
