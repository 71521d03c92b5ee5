package mcpauth

import "context"

// Reporter is how an Authorizer reports to the task whose request it serves. The library puts one in the context
// of every Token and Challenge call it makes for a task; a Client reports through it. Either function may be nil.
type Reporter struct {
	// Secret records a secret the Authorizer handled for the task (a token, a refresh token, a code, a PKCE
	// verifier, state, a client secret): the task masks it, and its encoded forms, wherever it appears.
	Secret func(value string)
	// Fact reports one of the facts package's mcp.* facts, with data that holds no secret.
	Fact func(name string, data map[string]any)
}

type reporterKey struct{}

// ContextWithReporter returns ctx carrying r, for the Authorizer's calls made with it.
func ContextWithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReporterFrom returns the Reporter ctx carries; its zero value (nil functions) when none.
func ReporterFrom(ctx context.Context) Reporter {
	r, _ := ctx.Value(reporterKey{}).(Reporter)
	return r
}

// secret reports values as secrets of the task ctx belongs to; empty ones are skipped.
func (r Reporter) secret(values ...string) {
	if r.Secret == nil {
		return
	}
	for _, v := range values {
		if v != "" {
			r.Secret(v)
		}
	}
}

func (r Reporter) fact(name string, data map[string]any) {
	if r.Fact != nil {
		r.Fact(name, data)
	}
}
