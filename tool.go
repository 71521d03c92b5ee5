package tool

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/internal/manifestschema"
	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/interp"
)

// Tool is a loaded, validated and compiled manifest. It is immutable and safe for concurrent use; tasks are
// started from it.
type Tool struct {
	src            []byte // the manifest as given, for Rediscover
	manifest       *Manifest
	opts           *options
	settings       map[string]any
	settingsSchema *schema.Schema
	rootParams     *schema.Schema
	actions        []*action
	events         []*event
	actionByName   map[string]*action
	funcTables     sync.Map // capability Key and Include → *funcTable (functionTable)
	funcTableCount atomic.Int64
	runtimeOnce    sync.Once
	runtimeRoot    map[string]any   // runtimeValues
	warnings       func() []Problem // nil when there are none
	skipped        []Skipped        // what top-level blocks offered but could not become actions
	expansions     []expansionCount // per expanded block, for facts.ActionsExpanded

	// Derived at load for tasks.
	levels       []*schema.Schema           // parameter schemas of every level: root, actions, events
	declared     map[string]schema.Property // every parameter name at any level (the allow-list namespace)
	secretParams map[string]bool            // parameters with format: password or writeOnly
	secrets      *redact.Set                // secret settings' values
	httpClient   *http.Client               // the host's client with the redirect policy of SPEC §4.4
	openTasks    atomic.Int64               // tasks started and not yet closed or detached
	now          atomic.Pointer[secondText] // nowText's last answer
	routing      *routing                   // WithRouteIndex: what tasks write to the routing index; else nil
}

func (t *Tool) index() {
	t.actionByName = make(map[string]*action, len(t.actions))
	t.declared = map[string]schema.Property{}
	t.secretParams = map[string]bool{}
	t.addLevel(t.rootParams)
	for _, a := range t.actions {
		t.actionByName[a.def.Name] = a
		t.addLevel(a.own)
		a.index()
		a.function = t.functionName(Capability{}, a)
		a.bound = t.boundOf(a)
	}
	for _, e := range t.events {
		t.addLevel(e.own)
	}
	t.secrets = &redact.Set{}
	if t.settingsSchema != nil {
		for _, p := range t.settingsSchema.Properties() {
			v, ok := t.settings[p.Name]
			if !ok {
				continue
			}
			if p.Secret {
				t.secrets.Add(textOf(v))
			}
			addNestedSecrets(t.secrets, p.Schema, v)
		}
	}
	if len(t.opts.webhookSecret) > 0 {
		t.secrets.Add(string(t.opts.webhookSecret))
	}
	for _, e := range t.events {
		e.index(t)
	}
	t.httpClient = httpspec.SameHostRedirects(t.opts.httpClient)
	t.routing = newRouting(t)
}

func (t *Tool) addLevel(s *schema.Schema) {
	if s == nil {
		return
	}
	t.levels = append(t.levels, s)
	for _, p := range s.Properties() {
		if _, seen := t.declared[p.Name]; !seen {
			t.declared[p.Name] = p
		}
		if p.Secret {
			t.secretParams[p.Name] = true
		}
	}
}

// textOf is the text a value would render as, the form in which a secret could leak.
func textOf(v any) string { return interp.Text(v) }

// Manifest returns the decoded manifest. It is shared: do not modify it.
func (t *Tool) Manifest() *Manifest { return t.manifest }

// Warnings returns the non-fatal findings of Load (SPEC §2): settings referenced without a settings schema,
// legacy aliases, unused blocks.
func (t *Tool) Warnings() []Problem {
	if t.warnings == nil {
		return nil
	}
	return append([]Problem(nil), t.warnings()...)
}

// Namespace returns the manifest's namespace.
func (t *Tool) Namespace() string { return t.manifest.Namespace }

// Name returns the manifest's name.
func (t *Tool) Name() string { return t.manifest.Name }

// addNestedSecrets adds the values of the secret properties nested inside an object setting: a `format: password`
// below `properties` at any depth.
func addNestedSecrets(set *redact.Set, schema map[string]any, value any) {
	props, _ := schema["properties"].(map[string]any)
	obj, _ := value.(map[string]any)
	for name, ps := range props {
		sub, _ := ps.(map[string]any)
		v, ok := obj[name]
		if sub == nil || !ok {
			continue
		}
		if sub["format"] == "password" || sub["writeOnly"] == true {
			set.Add(textOf(v))
		}
		addNestedSecrets(set, sub, v)
	}
}

// Load parses, validates and compiles a tool manifest given as YAML or JSON (SPEC §2). It checks everything before
// returning and collects every problem: on bad input the error is a *ValidationError whose Problems carry field
// paths, lines and columns. ctx bounds the whole load: once it ends, Load stops at its next step and returns
// ctx's error, unless a step it ended (an OpenAPI document fetch) reported a problem, which is then returned with
// the others. The returned Tool is immutable and safe for concurrent use.
func Load(ctx context.Context, manifest []byte, opts ...Option) (*Tool, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tool: load: %w", err)
	}
	return load(ctx, manifest, o)
}

// Rediscover loads t's manifest again with t's options, listing the tools of its MCP servers afresh when t was
// loaded WithDiscovery (after an MCP server said its tools changed: facts.MCPToolsChanged). Every tool goes through
// the same load checks: one that fails them is left out, in Skipped and a tool.action.skipped fact. t is not
// changed, and its tasks keep running on its definitions; the new Tool's tasks use the new ones. ctx bounds the
// load; errors are Load's.
func (t *Tool) Rediscover(ctx context.Context) (*Tool, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tool: load: %w", err)
	}
	return load(ctx, t.src, t.opts)
}

func load(ctx context.Context, manifest []byte, o *options) (*Tool, error) {
	l := &loader{ctx: ctx, opts: o, src: manifest}
	t := l.load()
	if err := ctx.Err(); err != nil && (t == nil || len(l.errs) == 0) { // stopped early, or done but too late
		return nil, fmt.Errorf("tool: load: %w", err)
	}
	if len(l.errs) > 0 {
		problems := l.problems(l.errs)
		if t != nil && t.secrets != nil {
			// A backend's problem can quote what a server printed at load (an MCP server's stderr), which can
			// echo a secret setting it was given (SPEC §12.2).
			for i := range problems {
				problems[i].Detail = t.secrets.Encoded(problems[i].Detail)
			}
		}
		return nil, &ValidationError{Problems: problems}
	}
	if len(l.warns) > 0 {
		// Locating warnings re-reads the source: do it only if the host asks for them. A warning can quote what
		// a server answered at load (a listing's error, with the URL a secret setting rendered), in any encoding.
		t.warnings = sync.OnceValue(func() []Problem {
			warnings := l.problems(l.warns)
			for i := range warnings {
				warnings[i].Detail = t.secrets.Encoded(warnings[i].Detail)
			}
			return warnings
		})
	}
	t.src = manifest
	t.reportSkipped(ctx)
	return t, nil
}

// LoadFile is Load for a file; relative paths inside the manifest (an OpenAPI document) resolve against the
// file's directory.
func LoadFile(ctx context.Context, path string, opts ...Option) (*Tool, error) {
	data, err := readManifest(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	return Load(ctx, data, append([]Option{func(o *options) error { o.baseDir = dir; return nil }}, opts...)...)
}

// ManifestSchema returns the JSON Schema (draft-07) of the manifest format, indented, for editors: the core keys
// and, for each backend and receiver registered in the options (WithRuntimes, WithReceivers; else the defaults),
// its blocks as it describes them (runtime.Schemer), so a third party's backend has its execute and top-level
// blocks in it. `tool schema` prints it for the command's registries. The schema checks structure only: Load also
// checks templates, CEL and references.
func ManifestSchema(opts ...Option) ([]byte, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	var backends, receivers []manifestschema.Plugin
	for _, kind := range o.runtimes.Kinds() {
		backend, _ := o.runtimes.Lookup(kind)
		backends = append(backends, pluginSchema(kind, backend))
	}
	for _, kind := range o.receivers.Kinds() {
		receiver, _ := o.receivers.Lookup(kind)
		receivers = append(receivers, pluginSchema(kind, receiver))
	}
	return manifestschema.Build(backends, receivers)
}

// Skipped is an item of a top-level runtime block that did not become an action (an OpenAPI operation whose
// request body cannot be sent, an MCP tool whose schema cannot be used), with the reason. Items a block's own
// selection leaves out are not Skipped: the facts.ActionsExpanded fact counts them. Load reports each one to the observer
// as a "tool.action.skipped" fact and Tool.Skipped lists them: nothing is dropped silently.
type Skipped struct {
	// Kind is the backend of the block, e.g. "openapi".
	Kind string `json:"kind"`
	// Name identifies the item: an operationId, "GET /pets/{id}" when it has none, an MCP tool name.
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// secondText is a second of the clock as RFC 3339 text.
type secondText struct {
	unix int64
	text string
}

// nowText is the clock's time as RFC 3339 text in UTC, `now` of a delivery's CEL variables. The text changes once
// a second, so the last one is kept: a busy webhook path formats it once a second, not once a delivery.
func (t *Tool) nowText() string {
	now := t.opts.clock.Now().UTC()
	if last := t.now.Load(); last != nil && last.unix == now.Unix() {
		return last.text
	}
	text := now.Format(time.RFC3339)
	t.now.Store(&secondText{unix: now.Unix(), text: text})
	return text
}
