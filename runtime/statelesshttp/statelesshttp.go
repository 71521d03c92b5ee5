// Package statelesshttp is the stateless_http action backend (SPEC §7.3): one independent HTTP request per call.
// Importing the root package registers it.
package statelesshttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/runtime"
)

// Kind is the execute-block key of this backend.
const Kind = "stateless_http"

func init() { runtime.Default().MustRegister(Backend{}) }

// Config is an action's stateless_http block.
type Config struct {
	httpspec.Request
	// ResponsePath is a JSONPath selecting the output from the response body.
	ResponsePath string `json:"response_path,omitempty"`
	// Timeout bounds one call (extension; default 30s).
	Timeout string `json:"timeout,omitempty"`
}

// Shared is the top-level stateless_http block: defaults for every stateless_http action.
type Shared struct {
	Config
	// BaseURL prefixes relative action URLs (extension).
	BaseURL string `json:"base_url,omitempty"`
}

// Action is a prepared stateless_http action.
type Action struct {
	Request      *httpspec.Compiled
	ResponsePath *httpspec.Path // nil when the whole body is the output
	Timeout      time.Duration
}

// Traits derives catalog flags from the HTTP method.
func (a *Action) Traits() runtime.Traits {
	if a.Request == nil {
		return HTTPTraits("")
	}
	return HTTPTraits(a.Request.Method)
}

// HTTPTraits are the catalog flags of an HTTP call with method: GET and HEAD read, others may write.
func HTTPTraits(method string) runtime.Traits {
	t := runtime.Traits{Owner: "http", OpenWorld: true, Capabilities: []string{"network"}}
	switch method {
	case "GET", "HEAD", "OPTIONS":
		t.ReadOnly, t.Idempotent, t.ConcurrencySafe = true, true, true
		t.Capabilities = append(t.Capabilities, "read")
	case "PUT", "DELETE":
		t.Idempotent, t.Destructive = true, true
		t.Capabilities = append(t.Capabilities, "write")
	default:
		t.Destructive = true
		t.Capabilities = append(t.Capabilities, "write")
	}
	return t
}

// Backend implements runtime.Runtime for stateless_http.
type Backend struct{}

// Kind returns "stateless_http".
func (Backend) Kind() string { return Kind }

// Prepare decodes and compiles the block, merged over the shared top-level block.
func (Backend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var cfg Config
	var shared Shared
	errs := b.Decode(&cfg)
	errs = append(errs, b.DecodeShared(&shared)...)
	if cfg.ResponsePath == "" {
		cfg.ResponsePath = shared.ResponsePath
	}
	if cfg.Timeout == "" {
		cfg.Timeout = shared.Timeout
	}
	a := &Action{}
	req, e := httpspec.Compile(b.Check, b.Path, cfg.Request, httpspec.Defaults{
		Path: b.SharedPath, Method: shared.Method, BaseURL: shared.BaseURL, Headers: shared.Headers, Body: shared.Body,
	}, runtime.ExecuteRoots...)
	errs = append(errs, e...)
	a.Request = req
	if cfg.ResponsePath != "" {
		x, pe := httpspec.JSONPath(b.Path.Child("response_path"), cfg.ResponsePath)
		errs.Add(pe)
		a.ResponsePath = x
	}
	d, de := httpspec.Duration(b.Path.Child("timeout"), cfg.Timeout)
	errs.Add(de)
	a.Timeout = d
	return a, errs.Err()
}

// DefaultTimeout bounds a call when neither the action nor the host's Limits set a timeout (SPEC §14).
const DefaultTimeout = runtime.DefaultCallTimeout

// Initialize returns an instance that sends every call with in.HTTPClient under in.Limits. It does no I/O.
func (Backend) Initialize(_ context.Context, in *runtime.Init) (runtime.Instance, error) {
	if in.HTTPClient == nil {
		return nil, runtime.Unrecoverable(errors.New("stateless_http: no HTTP client"))
	}
	return &instance{client: in.HTTPClient, limits: in.Limits}, nil
}

// instance is stateless: it holds only the task's client and limits, so it is safe for concurrent use.
type instance struct {
	client *http.Client
	limits runtime.Limits
}

// Invoke sends one request, bounded by the action's timeout (else Limits.CallTimeout, else DefaultTimeout) and
// by ctx (which carries that bound already when call.Bounded). Errors are classified as httpspec.Compiled.Exchange classifies them; a deadline is a recoverable
// timeout, a cancellation of ctx an error wrapping context.Canceled.
func (i *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, ok := a.(*Action)
	if !ok {
		return nil, runtime.Unrecoverable(fmt.Errorf("stateless_http: action of type %T", a))
	}
	if !call.Bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, act.CallTimeout(i.limits))
		defer cancel()
	}
	return act.Request.Exchange(ctx, i.client, call.Values, i.limits.ResponseBytes, act.ResponsePath)
}

// CallTimeout is the bound of one call: the action's timeout, else l.CallTimeout, else DefaultTimeout.
func (a *Action) CallTimeout(l runtime.Limits) time.Duration { return CallTimeout(a.Timeout, l) }

// Teardown does nothing: the instance holds no resources.
func (*instance) Teardown(context.Context) error { return nil }

// CallTimeout is the bound of one HTTP call: own when set, else the host's CallTimeout, else DefaultTimeout.
func CallTimeout(own time.Duration, l runtime.Limits) time.Duration {
	switch {
	case own > 0:
		return own
	case l.CallTimeout > 0:
		return l.CallTimeout
	}
	return DefaultTimeout
}

var (
	_ runtime.Runtime   = Backend{}
	_ runtime.Describer = (*Action)(nil)
	_ runtime.Bounded   = (*Action)(nil)
	_ runtime.Instance  = (*instance)(nil)
)

// ValidateShared checks the top-level stateless_http block once, whether or not an action uses it.
func (Backend) ValidateShared(_ context.Context, b *runtime.Block) error {
	var shared Shared
	errs := b.DecodeShared(&shared)
	if shared.BaseURL != "" {
		_, e := b.Check.URL(b.SharedPath.Child("base_url"), shared.BaseURL, "", runtime.ExecuteRoots...)
		errs = append(errs, e...)
	}
	_, e := b.Check.Map(b.SharedPath.Child("headers"), shared.Headers, runtime.ExecuteRoots...)
	errs = append(errs, e...)
	_, de := httpspec.Duration(b.SharedPath.Child("timeout"), shared.Timeout)
	errs.Add(de)
	return errs.Err()
}

var _ runtime.SharedValidator = Backend{}
