// Package openapi is the openapi action backend (SPEC §7.5): actions derived from the operations of an OpenAPI
// 3.0 or 3.1 document. This package validates the blocks; fetching documents and expanding operations arrive with
// the OpenAPI work. Importing the root package registers it.
package openapi

import (
	"context"
	"net/url"
	"regexp"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/runtime"
)

// Kind is the execute-block key of this backend.
const Kind = "openapi"

func init() { runtime.Default().MustRegister(Backend{}) }

// Shared is the top-level openapi block.
type Shared struct {
	// URL locates the document: an http(s) URL or a file path (relative to the manifest).
	URL string `json:"url"`
	// BaseURL overrides the document's servers[0] (extension).
	BaseURL string            `json:"base_url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Config is an action-level openapi block.
type Config struct {
	URL string `json:"url,omitempty"`
	// OperationID binds the action to one operation of the document (extension).
	OperationID string `json:"operation_id"`
}

// Action is a prepared openapi action.
type Action struct {
	DocumentURL string
	OperationID string
}

// Traits reports a network call whose effect the document decides; unknown is treated as destructive.
func (a *Action) Traits() runtime.Traits {
	return runtime.Traits{Owner: "http", OpenWorld: true, Destructive: true, Capabilities: []string{"network"}}
}

// Backend implements runtime.Runtime for openapi.
type Backend struct{}

// Kind returns "openapi".
func (Backend) Kind() string { return Kind }

var operationID = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Prepare validates an action's openapi block against the shared one.
func (Backend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var cfg Config
	var shared Shared
	errs := b.Decode(&cfg)
	errs = append(errs, b.DecodeShared(&shared)...)
	a := &Action{DocumentURL: cfg.URL, OperationID: cfg.OperationID}
	if cfg.URL != "" {
		errs = append(errs, checkURL(b.Path.Child("url"), cfg.URL)...)
	} else {
		a.DocumentURL = shared.URL
		if b.Shared == nil {
			errs.Add(field.Required(b.Path.Child("url"), "url is required when there is no top-level openapi block"))
		}
	}
	switch {
	case cfg.OperationID == "":
		errs.Add(field.Required(b.Path.Child("operation_id"), "operation_id is required in an action-level openapi block"))
	case !operationID.MatchString(cfg.OperationID):
		errs.Add(field.Invalid(b.Path.Child("operation_id"), "%q is not a valid operationId", cfg.OperationID))
	}
	return a, errs.Err()
}

// checkURL accepts an http(s) URL, a file: URL or a file path.
func checkURL(p *field.Path, s string) field.List {
	if s == "" {
		return field.List{field.Required(p, "url of the OpenAPI document is required")}
	}
	u, err := url.Parse(s)
	if err != nil {
		return field.List{field.Invalid(p, "not a URL or file path: %v", err)}
	}
	switch u.Scheme {
	case "", "file":
		return nil
	case "http", "https":
		if u.Host == "" {
			return field.List{field.Invalid(p, "URL has no host")}
		}
		return nil
	default:
		return field.List{field.Unsupported(p, "scheme %q is not supported (use http, https, file or a path)", u.Scheme)}
	}
}

// ValidateShared checks the top-level openapi block once.
func (Backend) ValidateShared(_ context.Context, b *runtime.Block) error {
	var shared Shared
	errs := b.DecodeShared(&shared)
	errs = append(errs, checkURL(b.SharedPath.Child("url"), shared.URL)...)
	if shared.BaseURL != "" {
		_, e := b.Check.URL(b.SharedPath.Child("base_url"), shared.BaseURL, "", runtime.ExecuteRoots...)
		errs = append(errs, e...)
	}
	for name, v := range shared.Headers {
		_, e := b.Check.Template(b.SharedPath.Child("headers").Key(name), v, runtime.ExecuteRoots...)
		errs = append(errs, e...)
	}
	return errs.Err()
}

// Initialize is not built yet: execution arrives with the OpenAPI work.
func (Backend) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return nil, runtime.ErrNotImplemented
}

var (
	_ runtime.Runtime         = Backend{}
	_ runtime.SharedValidator = Backend{}
	_ runtime.Describer       = (*Action)(nil)
)
