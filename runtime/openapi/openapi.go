// Package openapi is the openapi action backend (SPEC §7.5): actions derived from the operations of an OpenAPI 3.0
// or 3.1 document. Importing the root package registers it.
//
// The document is read with kin-openapi, which resolves every $ref in place and reads both 3.0 and 3.1 (type
// lists, numeric exclusive bounds, const, prefixItems). A document fetched from a URL reads $refs and follows
// redirects only on its own origin, a local one reads no http(s) $refs, unless the host allows more origins
// (runtime.Block.RefOrigins, tool.WithDocumentOrigins). Parsed documents are cached per process (CacheEntries,
// CacheTTL), keyed by location and allowed origins. A top-level openapi block expands (runtime.Expander) into one
// action per selected operation (Selection), named from its operationId by internal/funcname's rule, unless a
// declared action runs on openapi; an action-level block with operation_id binds one declared action to one
// operation. Invoke builds the request from the operation with internal/httpspec (base URL, headers, auth),
// serialises parameters in their OpenAPI styles and the body as JSON, form-urlencoded, multipart or a raw body
// (any other single-part media type: text or base64 arguments, or a file of the task's mount when the block sets
// files_from_mount; binary.go), and sends it with httpspec.Do, which classifies failures as stateless_http does
// (SPEC §7.3).
package openapi

import (
	"context"
	"net/url"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/statelesshttp"
	"github.com/getkin/kin-openapi/openapi3"
)

// Kind is the execute-block key of this backend.
const Kind = "openapi"

func init() { runtime.Default().MustRegister(Backend{}) }

// Shared is the top-level openapi block.
type Shared struct {
	// URL locates the document: an http(s) URL or a file path (relative to the manifest).
	URL string `json:"url"`
	// BaseURL overrides the document's servers (extension). It may start with a {settings.*} or {runtime.*}
	// token.
	BaseURL string `json:"base_url,omitempty"`
	// Headers are sent with every request, e.g. Authorization: "Bearer {auth.github()}". They are templates with
	// the roots of action execute fields (SPEC §4.2).
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds one call (extension; default the host's call timeout, else 30s).
	Timeout string `json:"timeout,omitempty"`
	// Select chooses the operations the block expands into (extension); all of them when it is absent.
	Select *Selection `json:"select,omitempty"`
	// FilesFromMount lets calls send files of the task's mount (TaskConfig.Mount) as raw bodies and multipart
	// file parts, named by a path relative to the mount (extension; default false: the path arguments are not
	// offered). Each file sent is reported as the fact FactFileSent.
	FilesFromMount bool `json:"files_from_mount,omitempty"`
	// MaxFileBytes bounds the bytes of one call's raw body and file parts together, read from the mount or
	// given as arguments (extension; default DefaultFileBytes, at most 1 GiB).
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// Config is an action-level openapi block.
type Config struct {
	URL string `json:"url,omitempty"`
	// OperationID binds the action to one operation of the document (extension): its operationId verbatim
	// ("repos/get"), or the action name the expansion gives it ("repos_get").
	OperationID string `json:"operation_id"`
}

// Action is a prepared openapi action: one operation of a document. It is immutable.
type Action struct {
	// DocumentURL is the document's location as the manifest gives it; OperationID names the operation.
	DocumentURL string
	OperationID string
	// Method and Path are the operation's (Path is the template as the document gives it, e.g. /pets/{petId},
	// /rest?method=flickr.photos.search, /#X-Amz-Target=DynamoDB_20120810.GetItem).
	Method string
	Path   string
	// Request holds the method, the base URL and the block's headers; Invoke adds the operation's path, query,
	// header and cookie parameters and the JSON body.
	Request *httpspec.Compiled
	Timeout time.Duration
	params  []param
	// body says how the request body is sent; nil when the operation takes none.
	body    *requestBody
	path    []pathPart
	schema  map[string]any
	dialect string
	// fixed are the values the document's path gives (a ?k=v query, a #X-Amz-Target=... fragment): sent on
	// every call, over any other value.
	fixed []fixed
	// queryNames are the names of the operation's query parameters, fixed ones included: keys an exploded object
	// must not produce.
	queryNames map[string]bool
}

// Parameters returns the operation's parameters as a JSON Schema object, every $ref resolved: what an action bound
// with operation_id takes when it declares no parameters of its own. The caller must not modify it: an expanded
// action shares the subschemas of the components it names with the document's other actions.
func (a *Action) Parameters() map[string]any { return a.schema }

// SchemaDialect returns the `$schema` URI of the dialect Parameters is in; "" is draft-07 (an OpenAPI 3.0
// document's schemas, converted).
func (a *Action) SchemaDialect() string { return a.dialect }

// Traits derives catalog flags from the operation's HTTP method, as stateless_http does.
func (a *Action) Traits() runtime.Traits { return statelesshttp.HTTPTraits(a.Method) }

// DefaultsOnServer reports true: an OpenAPI `default` says what the server assumes when a parameter or a body
// property is absent, so an optional one the LLM left out is not sent (SPEC §7.5). Sending it could change the
// meaning: GitHub's direction defaults to desc only when sort is created.
func (*Action) DefaultsOnServer() bool { return true }

// Backend implements runtime.Runtime for openapi.
type Backend struct{}

// Kind returns "openapi".
func (Backend) Kind() string { return Kind }

// Prepare validates an action's openapi block against the shared one, reads the document (bounded by ctx) and
// binds the action to the operation named by operation_id. The operation's parameters are offered to the loader
// through Action.Parameters: an action that declares none takes them, one that declares its own must declare
// every parameter the operation requires.
func (Backend) Prepare(ctx context.Context, b *runtime.Block) (runtime.Action, error) {
	var cfg Config
	var shared Shared
	errs := b.Decode(&cfg)
	errs = append(errs, b.DecodeShared(&shared)...)
	a := &Action{DocumentURL: cfg.URL, OperationID: cfg.OperationID}
	urlPath := b.Path.Child("url")
	if cfg.URL != "" {
		errs = append(errs, checkURL(urlPath, cfg.URL)...)
	} else {
		a.DocumentURL, urlPath = shared.URL, b.SharedPath.Child("url")
		if b.Shared == nil {
			errs.Add(field.Required(b.Path.Child("url"), "url is required when there is no top-level openapi block"))
		}
	}
	idPath := b.Path.Child("operation_id")
	switch {
	case cfg.OperationID == "":
		errs.Add(field.Required(idPath, "operation_id is required in an action-level openapi block"))
	case len(cfg.OperationID) > maxOperationID:
		errs.Add(field.Invalid(idPath, "operation_id is longer than %d bytes", maxOperationID))
	}
	sp := b.SharedPath
	if sp == nil {
		sp = field.NewPath(Kind)
	}
	parts, e := compileShared(b.Check, sp, &shared)
	errs = append(errs, e...)
	if len(errs) > 0 {
		return a, errs.Err()
	}
	doc, _, err := document(ctx, urlPath, a.DocumentURL, b.BaseDir, originsOf(b), sizeOf(b))
	if err != nil {
		return a, err
	}
	path, method, item, op := find(doc, cfg.OperationID)
	if op == nil {
		return a, field.Invalid(idPath, "the document has no operation with operationId %q", cfg.OperationID)
	}
	a.OperationID = op.OperationID
	o, err := convert(path, method, item, op, schemaDialect(doc))
	if err == nil {
		err = offerFiles(o, parts.files)
	}
	if err != nil {
		return a, field.Invalid(idPath, "operation %q cannot be used: %v", cfg.OperationID, err)
	}
	base, err := parts.base(b.Check, doc, a.DocumentURL, item, op)
	if err != nil {
		return a, err
	}
	fill(a, o, parts, base)
	return a, errs.Err()
}

// maxOperationID bounds operation_id: the OpenAPI specification sets no limit, this only stops a runaway value.
const maxOperationID = 1024

// document reads the document at raw (readDocument); a failure is a problem at p.
func document(ctx context.Context, p *field.Path, raw, baseDir string, extra []string,
	limit int64) (*openapi3.T, *rawSource, error) {
	doc, src, err := readDocument(ctx, raw, baseDir, extra, limit)
	if err != nil {
		return nil, nil, field.Invalid(p, "%v", err)
	}
	return doc, src, nil
}

// fill completes a from a converted operation.
func fill(a *Action, o *operation, parts *sharedParts, base *interp.URL) {
	a.Method, a.Path, a.params, a.body, a.Timeout = o.method, o.path, o.params, o.body, parts.timeout
	a.schema, a.dialect = o.schema, o.dialect
	a.path, a.fixed = splitPath(o.urlPath, o.params), o.fixed
	a.queryNames = map[string]bool{}
	for _, f := range o.fixed {
		if f.in == "query" {
			a.queryNames[f.name] = true
		}
	}
	for _, p := range o.params {
		if p.in == "query" {
			a.queryNames[p.name] = true
		}
	}
	a.Request = &httpspec.Compiled{Method: o.method, URL: base, Headers: parts.headers}
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

// ValidateShared checks the top-level openapi block once; the document itself is read by Expand.
func (Backend) ValidateShared(_ context.Context, b *runtime.Block) error {
	var shared Shared
	errs := b.DecodeShared(&shared)
	errs = append(errs, checkURL(b.SharedPath.Child("url"), shared.URL)...)
	if shared.Select != nil {
		errs = append(errs, shared.Select.check(b.SharedPath.Child("select"))...)
	}
	if len(errs) == 0 {
		_, e := compileShared(b.Check, b.SharedPath, &shared)
		errs = append(errs, e...)
	}
	return errs.Err()
}

var (
	_ runtime.Runtime         = Backend{}
	_ runtime.SharedValidator = Backend{}
	_ runtime.Expander        = Backend{}
	_ runtime.Describer       = (*Action)(nil)
	_ runtime.ServerDefaults  = (*Action)(nil)
)
