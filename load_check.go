package tool

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/internal/suggest"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// checker implements runtime.Checker for one action or event: it knows which parameters and settings are declared
// where the block is, and reports every reference that does not resolve (SPEC §2, §4).
type checker struct {
	load *loader
	// params are the parameters visible here: root plus the action's (or the event's) own.
	params map[string]schema.Property
	// filterParams are the names a filter may use: the whole allow-list namespace (every level).
	filterParams map[string]bool
	// message is set for event message templates, where secret settings are refused.
	message bool
	// contextReads are the keys of the task context that the checked fields always read.
	contextReads []contextRead
}

// contextRead is a key of TaskConfig.Context that a field reads on every call: {context.K} in a template, or
// context.K outside any condition in a cel expression.
type contextRead struct {
	key  string // "" for the whole context ({context})
	path string // the field that reads it
	text string // how it reads it: {context.K} or context.K
}

// readsContext records that the field at p reads key of the task context.
func (c *checker) readsContext(p *field.Path, key, text string) {
	c.contextReads = append(c.contextReads, contextRead{key: key, path: p.String(), text: text})
}

var _ runtime.Checker = (*checker)(nil)

// rootFields lists the fields of the roots whose shape is fixed (SPEC §4.2).
var rootFields = map[string][]string{
	interp.RootRuntime:      {"version", "api_root", "dashboard_url"},
	interp.RootAgent:        {"name", "namespace"},
	interp.RootMount:        {"bucket", "prefix", "backend"},
	interp.RootSubscription: {"id", "expires_at_ms"},
	interp.RootPoll:         {"last_fetched_at"},
}

// rootWhere says where a root may be used, for the problem when it is used elsewhere.
var rootWhere = map[string]string{
	interp.RootSession:      "only in stateful_session execute and destroy requests",
	interp.RootSubscribe:    "only in a subscription's unsubscribe request",
	interp.RootSubscription: "only in a subscription's subscribe and unsubscribe requests",
	interp.RootAuth:         "only in action execute fields and receive requests",
	interp.RootEvent:        "only in event messages",
	interp.RootItem:         "only in poll extractions",
	interp.RootPoll:         "only in poll requests",
	interp.RootMount:        "only in action execute fields",
	interp.RootContext:      "only in action execute fields",
}

func (c *checker) Warn(w *field.Error) { c.load.warn(w) }

func (c *checker) Template(p *field.Path, src string, roots ...string) (*interp.Template, field.List) {
	t, err := interp.Parse(src)
	if err != nil {
		return nil, field.List{templateError(p, err)}
	}
	return t, c.refs(p, t.Refs(), roots)
}

func (c *checker) Value(p *field.Path, v any, roots ...string) (*interp.Value, field.List) {
	errs := c.leaves(p, v, roots)
	if len(errs) > 0 {
		return nil, errs
	}
	val, err := interp.ParseValue(v)
	if err != nil {
		return nil, field.List{templateError(p, err)}
	}
	return val, nil
}

// leaves checks every string leaf of a JSON value as a template, each at its own path.
func (c *checker) leaves(p *field.Path, v any, roots []string) field.List {
	var errs field.List
	switch v := v.(type) {
	case string:
		_, errs = c.Template(p, v, roots...)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			errs = append(errs, c.leaves(p.Key(k), v[k], roots)...)
		}
	case []any:
		for i, item := range v {
			errs = append(errs, c.leaves(p.Index(i), item, roots)...)
		}
	}
	return errs
}

func (c *checker) Map(p *field.Path, m map[string]string, roots ...string) (map[string]*interp.Template, field.List) {
	var errs field.List
	out := make(map[string]*interp.Template, len(m))
	for k, v := range m {
		t, e := c.Template(p.Key(k), v, roots...)
		errs = append(errs, e...)
		out[k] = t
	}
	return out, errs
}

func (c *checker) URL(p *field.Path, src, base string, roots ...string) (*interp.URL, field.List) {
	if base != "" && !strings.HasPrefix(src, "{") && !strings.Contains(src, "://") {
		src = strings.TrimRight(base, "/") + "/" + strings.TrimLeft(src, "/")
	}
	u, err := interp.ParseURL(src, trustedPrefix)
	if err != nil {
		return nil, field.List{templateError(p, err)}
	}
	errs := c.refs(p, u.Refs(), roots)
	for _, r := range u.AuthorityRefs() {
		if r.Root != interp.RootParameters || len(r.Steps) == 0 {
			continue
		}
		if prop, ok := c.params[r.Steps[0].Name]; ok && !prop.RequireBinding {
			errs.Add(field.Forbidden(p, "{%s} is in the URL's scheme, host or port: only parameters with require_binding: true may go there, so the LLM can never choose the host", r.Text))
		}
	}
	return u, errs
}

// trustedPrefix says which leading tokens may supply a URL's scheme and host (SPEC §4.4).
func trustedPrefix(r interp.Ref) bool {
	switch r.Root {
	case interp.RootSettings, interp.RootRuntime, interp.RootMount, interp.RootAgent:
		return true
	}
	return false
}

func (c *checker) CEL(p *field.Path, expr string, scope celenv.Scope) (*celenv.Program, field.List) {
	prog, err := c.load.compileCEL(scope, expr)
	if err != nil {
		return nil, field.List{field.Invalid(p, "%v", err)}
	}
	if scope == celenv.ScopeAction {
		for _, key := range prog.RequiredKeys(interp.RootContext, "c") {
			c.readsContext(p, key, "context."+key)
		}
	}
	var errs field.List
	for _, name := range prog.ParameterRefs() {
		if !c.filterParams[name] {
			errs.Add(field.Invalid(p, "parameters.%s is not a declared parameter%s", name,
				suggest.Hint(name, slices.Collect(maps.Keys(c.filterParams)))))
		}
	}
	return prog, errs
}

// refs checks every reference against the roots allowed here and the manifest's declarations.
func (c *checker) refs(p *field.Path, refs []interp.Ref, roots []string) field.List {
	var errs field.List
	for _, r := range refs {
		if !slices.Contains(roots, r.Root) {
			where := rootWhere[r.Root]
			if where == "" {
				where = "in other fields"
			}
			errs.Add(field.Forbidden(p, "{%s}: %s may be used %s (allowed here: %s)", r.Text, r.Root, where,
				strings.Join(roots, ", ")))
			continue
		}
		if e := c.ref(p, r); e != nil {
			errs.Add(e)
		} else if r.Root == interp.RootContext {
			key := ""
			if len(r.Steps) > 0 && !r.Steps[0].IsIndex {
				key = r.Steps[0].Name
			}
			c.readsContext(p, key, r.String())
		}
	}
	return errs
}

func (c *checker) ref(p *field.Path, r interp.Ref) *field.Error {
	first := ""
	if len(r.Steps) > 0 && !r.Steps[0].IsIndex {
		first = r.Steps[0].Name
	}
	switch r.Root {
	case interp.RootParameters:
		if first == "" {
			return nil
		}
		if _, ok := c.params[first]; !ok {
			return field.Invalid(p, "{%s}: %q is not a declared parameter%s", r.Text, first,
				suggest.Hint(first, propNames(c.params)))
		}
	case interp.RootSettings:
		return c.setting(p, r)
	case interp.RootAuth:
		if first == "" || len(r.Steps) != 1 {
			return field.Invalid(p, "{%s}: write {auth.<provider>()}", r.Text)
		}
		if !r.Call {
			c.load.warn(field.Invalid(p, "{%s} is a legacy form of {auth.%s()}", r.Text, first))
		}
	default:
		if fields, fixed := rootFields[r.Root]; fixed {
			if first == "" || !slices.Contains(fields, first) {
				return field.Invalid(p, "{%s}: %s has the fields %s%s", r.Text, r.Root, strings.Join(fields, ", "),
					suggest.Hint(first, fields))
			}
		}
	}
	return nil
}

// setting resolves {settings.a.b} to the longest declared key ("a.b" before "a").
func (c *checker) setting(p *field.Path, r interp.Ref) *field.Error {
	name := settingName(r, c.load.settingKeys())
	if name == "" {
		return field.Invalid(p, "{%s}: name a setting", r.Text)
	}
	s := c.load.settingsSchema
	if !c.load.hasSettingsSchema {
		c.load.warn(field.Invalid(p, "{%s}: the tool declares no settings schema, so the host must supply the setting %q (WithSettings)", r.Text, name))
		return nil
	}
	if s == nil {
		return nil // the settings schema has problems of its own
	}
	prop, ok := s.Property(name)
	if !ok {
		return field.Invalid(p, "{%s}: %q is not declared in the settings schema%s", r.Text, name,
			suggest.Hint(name, c.load.settingKeys()))
	}
	if c.message && prop.Secret {
		return field.Forbidden(p, "{%s}: the setting %q is secret and may not appear in a message", r.Text, name)
	}
	return nil
}

// settingName finds which declared key a settings reference names: the longest dotted prefix of its steps that
// is declared, else its first step.
func settingName(r interp.Ref, declared []string) string {
	var parts []string
	for _, s := range r.Steps {
		if s.IsIndex {
			break
		}
		parts = append(parts, s.Name)
	}
	for n := len(parts); n > 1; n-- {
		if joined := strings.Join(parts[:n], "."); slices.Contains(declared, joined) {
			return joined
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return parts[0]
}

// templateError reports a template that does not parse, pointing at the character (1-based) in the field.
func templateError(p *field.Path, err error) *field.Error {
	var perr *interp.Error
	if errors.As(err, &perr) {
		hint := ""
		if perr.Suggestion != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", perr.Suggestion)
		}
		return field.Invalid(p, "%s%s, at character %d of the template", perr.Msg, hint, perr.Offset+1)
	}
	return field.Invalid(p, "%s", strings.TrimPrefix(fmt.Sprint(err), "interp: "))
}

func propNames(m map[string]schema.Property) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkContext reports each key of the task context that an action the capability includes reads on every call
// but cfg.Context lacks (README, "Wiring a task"): a call would fail on it in front of the model, which cannot fix
// it. Each key is reported once, at the first field that reads it.
func (t *Tool) checkContext(cfg TaskConfig) []Problem {
	var problems []Problem
	seen := map[string]bool{}
	for _, a := range t.actions {
		if !cfg.Capability.includes(a.def.Name) {
			continue
		}
		for _, r := range a.contextReads {
			_, has := cfg.Context[r.key]
			if seen[r.key] || (r.key == "" && cfg.Context != nil) || (r.key != "" && has) {
				continue
			}
			seen[r.key] = true
			path, what := "context", "a Context"
			if r.key != "" {
				path, what = "context."+r.key, fmt.Sprintf("the key %q in Context", r.key)
			}
			problems = append(problems, Problem{Path: path, Type: "required", Detail: fmt.Sprintf(
				"action %s reads %s at %s, so the task needs %s (TaskConfig.Context)", a.def.Name, r.text, r.path, what)})
		}
	}
	return problems
}
