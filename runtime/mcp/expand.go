package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// actionName is the manifest's rule for action names (SPEC §1).
var actionName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

// maxRefDepth bounds how deep $ref inlining goes; deeper (or recursive) schemas are skipped.
const maxRefDepth = 32

// Expand lists the tools of the top-level block's server (tools/list) and returns one action per tool, bound to
// the shared server: name and description from the tool, parameters from its input schema with local $refs
// inlined, annotations from its hints. It runs only when the host opted in (b.Discover) and no declared action
// runs on mcp (b.Used, SPEC §7.6; this includes actions with a server of their own, which the block cannot tell
// apart); otherwise it returns an empty expansion. The server is started (or connected to) for the listing and
// closed before Expand returns: start, handshake and listing are bounded by ctx and by the block's timeout (else
// DefaultTimeout), closing by DefaultTeardownTimeout. A server that cannot be reached or listed is an error; a tool
// that cannot become an action (a name the manifest does not allow, a schema that is not a usable object schema) is
// skipped with the reason. A server that refuses the listing for want of authorization (401, 403) is a warning
// and no action. Declared actions get their tools' hints from Annotate.
func (be Backend) Expand(ctx context.Context, b *runtime.Block) (*runtime.Expansion, error) {
	if !b.Discover || b.Used || b.Shared == nil {
		return &runtime.Expansion{}, nil
	}
	if b.Check == nil {
		return nil, errors.New("expanding needs the block's Checker")
	}
	srv, key := sharedServer(b)
	if srv == nil {
		return nil, errors.New("the top-level mcp block has problems")
	}
	tools, err := be.listTools(ctx, srv, key, b)
	if err != nil && needsAuthorization(err) {
		// Protected (OAuth): at load there is no end user to authorize for. A warning, so that the manifest
		// still loads; its calls then authorize through the task's mcpauth.Authorizer.
		return &runtime.Expansion{Warnings: field.List{field.Invalid(b.SharedPath, "the server needs "+
			"authorization, so its tools could not be listed at load: declare the actions in the manifest")}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the tools of the top-level server: %w", err)
	}
	exp := &runtime.Expansion{}
	for _, t := range tools {
		if !actionName.MatchString(t.Name) {
			exp.Skipped = append(exp.Skipped, runtime.Skipped{Name: t.Name,
				Reason: "the name is not a valid action name (^[a-zA-Z][a-zA-Z0-9_-]{0,63}$)"})
			continue
		}
		params, whole, err := parameters(t.Name, t.InputSchema, b.SharedPath)
		if err != nil {
			exp.Skipped = append(exp.Skipped, runtime.Skipped{Name: t.Name, Reason: err.Error()})
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		hints, title := annotations(t.Annotations), t.title()
		exp.Actions = append(exp.Actions, runtime.Expanded{
			Name: t.Name, Description: desc, Title: title, Parameters: params, Schema: whole,
			Dialect: schema.Draft2020.URL(), OutputSchema: outputSchema(t.OutputSchema), Annotations: hints,
			Definition: t.raw,
			// The block's timeout bounds its calls, as Prepare gives a declared action on the shared server.
			Action: &Action{Server: srv, Key: key, ToolName: t.Name, Hints: hints, Timeout: srv.Timeout},
		})
	}
	return exp, nil
}

// listedTool is one tool of a tools/list reply. Its schemas are kept as the server sent them: mcp-go's Tool keeps
// only a few root keywords of an inputSchema (and fails the whole listing on a boolean one).
type listedTool struct {
	Name         string             `json:"name"`
	Title        string             `json:"title"`
	Description  string             `json:"description"`
	Annotations  mcp.ToolAnnotation `json:"annotations"`
	InputSchema  json.RawMessage    `json:"inputSchema"`
	OutputSchema json.RawMessage    `json:"outputSchema"`
	// raw is the whole entry as the server sent it (runtime.Expanded.Definition).
	raw json.RawMessage
}

// UnmarshalJSON decodes the entry and keeps it whole.
func (t *listedTool) UnmarshalJSON(b []byte) error {
	type plain listedTool
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	t.raw = append(json.RawMessage(nil), b...)
	return nil
}

// title is the tool's title, else its annotations' title.
func (t listedTool) title() string {
	if t.Title != "" {
		return t.Title
	}
	return t.Annotations.Title
}

// Annotate gives each declared action the hints and title of the tool it calls, for the catalog (where the
// manifest's own annotations win flag by flag), when the host opted in (b.Discover): it lists the tools of their
// servers at load, each server once and all of them together, whether the action runs on the top-level block's
// server or on one of its own, and whether or not the manifest has a top-level block. Each listing is bounded by
// ctx and by its server's timeout (else DefaultTimeout); a server that cannot be listed is a warning. Without
// consent it contacts no server, and no server is listed later for hints either: the catalog a host showed stays
// the one Load built.
func (be Backend) Annotate(ctx context.Context, b *runtime.Block) field.List {
	if !b.Discover {
		return nil
	}
	byServer := map[string][]*Action{}
	var keys []string
	for _, d := range b.Declared {
		act, ok := d.(*Action)
		if !ok || act.Server == nil {
			continue
		}
		if _, seen := byServer[act.Key]; !seen {
			keys = append(keys, act.Key)
		}
		byServer[act.Key] = append(byServer[act.Key], act)
	}
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for n, key := range keys {
		wg.Go(func() { errs[n] = be.hint(ctx, b, byServer[key]) }) // each goroutine sets its own actions
	}
	wg.Wait()
	var warnings field.List
	for n, err := range errs {
		if err != nil {
			warnings.Add(field.Invalid(field.NewPath(keys[n]), "the server's tools could not be listed for their "+
				"hints: %v", err))
		}
	}
	return warnings
}

// hint lists the tools of the server of acts (which share it) and gives each of acts the hints and title of the
// tool it calls.
func (be Backend) hint(ctx context.Context, b *runtime.Block, acts []*Action) error {
	tools, err := be.listTools(ctx, acts[0].Server, acts[0].Key, b)
	if err != nil {
		return err
	}
	byName := make(map[string]listedTool, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
	}
	for _, act := range acts {
		if t, ok := byName[act.ToolName]; ok {
			act.Hints, act.ToolTitle = annotations(t.Annotations), t.title()
		}
	}
	return nil
}

// needsAuthorization reports a listing that the server refused for want of authorization (a 401, or a 403), or
// that the load's Authorizer could not authorize.
func needsAuthorization(err error) bool {
	var ae *authError
	if errors.Is(err, transport.ErrAuthorizationRequired) || errors.As(err, &ae) {
		return true
	}
	m := httpStatus.FindStringSubmatch(err.Error())
	return m != nil && (m[1] == "401" || m[1] == "403")
}

// maxListPages bounds how many tools/list pages a listing reads.
const maxListPages = 1000

// listTools connects to srv (the server block at key) with the load-time values, lists its tools and closes the
// connection; connecting and listing are bounded by ctx and by the server's timeout (else DefaultTimeout). A
// remote server's requests are authorized by be.LoadAuthorizer, within one listing's budget.
func (be Backend) listTools(ctx context.Context, srv *CompiledServer, key string, b *runtime.Block) ([]listedTool, error) {
	timeout := srv.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := dial{srv: srv, values: b.Values, life: ctx, replyWait: max(be.replyFloor(), timeout)}
	if be.LoadAuthorizer != nil && srv.Transport != TransportStdio {
		d.auth, d.server, d.budget = be.LoadAuthorizer, mcpauth.Server{Name: key}, &authBudget{}
	}
	sess, err := connect(lctx, d)
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultTeardownTimeout)
		defer ccancel()
		_ = sess.close(cctx)
	}()
	tools, err := sess.listRaw(lctx)
	if err != nil {
		return nil, sess.failure("tools/list", startErr(lctx, err))
	}
	return tools, nil
}

// listRaw sends tools/list itself, page after page, on the session's transport, and decodes each tool with its
// schemas whole.
func (s *session) listRaw(ctx context.Context) ([]listedTool, error) {
	var tools []listedTool
	seen := map[string]bool{"": true}
	cursor := ""
	for page := 1; ; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		resp, err := s.client.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
			ID: mcp.NewRequestId(fmt.Sprintf("tools-list-%d", page)), Method: string(mcp.MethodToolsList), Params: params})
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, resp.Error.AsError()
		}
		var result struct {
			Tools      []listedTool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &result); err != nil {
			return nil, fmt.Errorf("the reply is not a tools/list result: %v", err)
		}
		tools = append(tools, result.Tools...)
		if result.NextCursor == "" {
			return tools, nil
		}
		if seen[result.NextCursor] || page >= maxListPages {
			return nil, fmt.Errorf("the server's pages do not end (cursor %q again, or over %d pages)",
				result.NextCursor, maxListPages)
		}
		seen[result.NextCursor] = true
		cursor = result.NextCursor
	}
}

// parameters converts a tool's input schema into an action's two schemas (SPEC §3.1): whole is the schema as the
// server sent it, which arguments are validated against in its dialect (its `$schema`, else 2020-12, MCP
// 2025-11-25); llm is the copy shown to the LLM, with local $refs inlined where they can be (a recursive or
// anchored reference stays as written, its `$defs` carried along). The error says why the schema is unusable.
func parameters(name string, raw json.RawMessage, base *field.Path) (llm, whole map[string]any, err error) {
	path := base.Child("tools").Key(name).Child("inputSchema")
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var doc any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := d.Decode(&doc); err != nil {
			return nil, nil, errors.New("the input schema is not JSON")
		}
	}
	switch v := doc.(type) {
	case nil:
		doc = map[string]any{} // absent: any arguments
	case bool:
		if !v {
			return nil, nil, errors.New("the input schema is false: no arguments are ever valid")
		}
		doc = map[string]any{} // true: any arguments
	case map[string]any:
		if typ, ok := v["type"]; ok && typ != "object" {
			return nil, nil, fmt.Errorf("the input schema has type %v, not object", typ)
		}
	default:
		return nil, nil, errors.New("the input schema is not a JSON Schema object")
	}
	whole = doc.(map[string]any)
	// MCP's required list decides (a property without it is optional, default or not).
	if _, ok := whole["required"]; !ok {
		whole["required"] = []any{}
	}
	opts := schema.Options{Parameters: true, Dialect: schema.Draft2020, Foreign: true}
	if _, problems := schema.Compile(whole, path, opts); len(problems) > 0 {
		return nil, nil, unusable(problems)
	}
	llm = inlined(whole)
	if _, problems := schema.Compile(llm, path, opts); len(problems) > 0 {
		llm = asWritten(whole) // inlining moved a reference out of its resource: show the schema as it is
	}
	return llm, whole, nil
}

func unusable(problems field.List) error {
	msgs := make([]string, len(problems))
	for n, p := range problems {
		msgs[n] = p.Error()
	}
	return fmt.Errorf("the input schema is not usable: %s", strings.Join(msgs, "; "))
}

// inlined returns the LLM copy of a whole input schema: every local $ref inlined, or, when one cannot be (a
// recursive schema, an anchor), a copy of the schema as it is, whose $defs the LLM schema carries.
func inlined(whole map[string]any) map[string]any {
	in := inliner{root: whole}
	v, err := in.inline(whole, 0)
	if err != nil {
		return asWritten(whole)
	}
	out := v.(map[string]any)
	delete(out, "$defs")
	delete(out, "definitions")
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	return out
}

// asWritten is the LLM copy of a schema that cannot be inlined: the schema itself, with its properties.
func asWritten(whole map[string]any) map[string]any {
	llm := maps.Clone(whole)
	if _, ok := llm["properties"]; !ok {
		llm["properties"] = map[string]any{}
	}
	return llm
}

// inliner replaces local $refs ("#/$defs/x", "#/definitions/x") by a copy of what they point to.
type inliner struct{ root map[string]any }

func (in inliner) inline(v any, depth int) (any, error) {
	if depth > maxRefDepth {
		return nil, errors.New("the input schema's $refs nest too deep (recursive schema)")
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch k {
			case "$defs", "definitions", "$ref":
				continue
			case "$id", "$dynamicRef", "$recursiveRef":
				// A new base URI or a dynamic reference: pointers no longer mean what they say at the root.
				return nil, fmt.Errorf("the input schema has %s: its references are kept as written", k)
			case "enum", "const", "default", "examples":
				out[k] = e // data, not schemas: a "$ref" key in it is no reference
				continue
			}
			c, err := in.inline(e, depth)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		ref, ok := v["$ref"].(string)
		if !ok {
			return out, nil
		}
		target, err := in.resolve(ref)
		if err != nil {
			return nil, err
		}
		t, err := in.inline(target, depth+1)
		if err != nil || len(out) == 0 {
			return t, err
		}
		// Since 2019-09 a $ref's siblings apply too: keep both.
		all, _ := out["allOf"].([]any)
		out["allOf"] = append(slices.Clip(all), t)
		return out, nil
	case []any:
		out := make([]any, len(v))
		for n, e := range v {
			c, err := in.inline(e, depth)
			if err != nil {
				return nil, err
			}
			out[n] = c
		}
		return out, nil
	}
	return v, nil
}

// resolve follows a local JSON pointer.
func (in inliner) resolve(ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("the input schema has a $ref that is not local: %q", ref)
	}
	var cur any = in.root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the input schema's $ref %q does not resolve", ref)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("the input schema's $ref %q does not resolve", ref)
		}
	}
	return cur, nil
}

// outputSchema decodes a tool's outputSchema, kept as the server sent it; nil when it is absent or not an object.
func outputSchema(raw json.RawMessage) map[string]any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if len(bytes.TrimSpace(raw)) == 0 || d.Decode(&m) != nil {
		return nil
	}
	return m
}

// annotations converts MCP tool hints into catalog traits; nil when the tool gives no hint. Per MCP, absent hints
// mean not read-only, destructive, not idempotent, open world.
func annotations(a mcp.ToolAnnotation) *runtime.Traits {
	if a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil {
		return nil
	}
	is := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	t := &runtime.Traits{
		Owner:       "mcp_server",
		ReadOnly:    is(a.ReadOnlyHint, false),
		Destructive: is(a.DestructiveHint, true),
		Idempotent:  is(a.IdempotentHint, false),
		OpenWorld:   is(a.OpenWorldHint, true),
	}
	if t.ReadOnly {
		t.Destructive = false
		t.ConcurrencySafe = true
		t.Capabilities = []string{"read"}
	} else {
		t.Capabilities = []string{"write"}
	}
	if t.OpenWorld {
		t.Capabilities = append(t.Capabilities, "network")
	}
	return t
}
