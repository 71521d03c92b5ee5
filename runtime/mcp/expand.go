package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/runtime"
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
// skipped with the reason.
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
	tools, err := listTools(ctx, srv, b, be.replyFloor())
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
		params, err := parameters(t, b.SharedPath)
		if err != nil {
			exp.Skipped = append(exp.Skipped, runtime.Skipped{Name: t.Name, Reason: err.Error()})
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		hints := annotations(t.Annotations)
		exp.Actions = append(exp.Actions, runtime.Expanded{
			Name: t.Name, Description: desc, Parameters: params, Annotations: hints,
			Action: &Action{Server: srv, Key: key, ToolName: t.Name, Hints: hints},
		})
	}
	return exp, nil
}

// listTools connects to srv with the load-time values, lists its tools and closes the connection; connecting and
// listing are bounded by ctx and by the server's timeout (else DefaultTimeout).
func listTools(ctx context.Context, srv *CompiledServer, b *runtime.Block, replyFloor time.Duration) ([]mcp.Tool, error) {
	timeout := srv.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sess, err := connect(lctx, dial{srv: srv, values: b.Values, life: ctx, replyWait: max(replyFloor, timeout)})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultTeardownTimeout)
		defer ccancel()
		_ = sess.close(cctx)
	}()
	res, err := sess.client.ListTools(lctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, sess.failure("tools/list", startErr(lctx, err))
	}
	return res.Tools, nil
}

// parameters converts a tool's input schema into an action's parameters: a JSON Schema object whose local $refs
// are inlined, checked as a manifest's parameters schema would be. The error says why the schema is unusable.
func parameters(t mcp.Tool, base *field.Path) (map[string]any, error) {
	raw := t.RawInputSchema
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(t.InputSchema); err != nil {
			return nil, fmt.Errorf("the input schema cannot be encoded: %v", err)
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil || doc == nil {
		return nil, errors.New("the input schema is not a JSON object")
	}
	if typ, ok := doc["type"]; ok && typ != "object" {
		return nil, fmt.Errorf("the input schema has type %v, not object", typ)
	}
	in := inliner{root: doc}
	v, err := in.inline(doc, 0)
	if err != nil {
		return nil, err
	}
	out := v.(map[string]any)
	delete(out, "$defs")
	delete(out, "definitions")
	delete(out, "$schema") // MCP schemas often name draft 2020-12; what we keep is valid draft-07
	out["type"] = "object"
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	// MCP's required list decides (a property without it is optional, default or not).
	if _, ok := out["required"]; !ok {
		out["required"] = []any{}
	}
	if _, problems := schema.Compile(out, base.Child("tools").Key(t.Name).Child("inputSchema"),
		schema.Options{Parameters: true}); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for n, p := range problems {
			msgs[n] = p.Error()
		}
		return nil, fmt.Errorf("the input schema is not usable: %s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// inliner replaces local $refs ("#/$defs/x", "#/definitions/x") by a copy of what they point to.
type inliner struct{ root map[string]any }

func (in inliner) inline(v any, depth int) (any, error) {
	if depth > maxRefDepth {
		return nil, errors.New("the input schema's $refs nest too deep (recursive schema)")
	}
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			target, err := in.resolve(ref)
			if err != nil {
				return nil, err
			}
			return in.inline(target, depth+1)
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k == "$defs" || k == "definitions" {
				continue
			}
			c, err := in.inline(e, depth)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
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
