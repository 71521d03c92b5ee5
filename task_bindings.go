package tool

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
)

// checkBindings applies the NewTask checks of SPEC §3.3 and returns every problem, sorted by path.
func (t *Tool) checkBindings(bindings map[string]any) []Problem {
	var errs field.List
	root := field.NewPath("bindings")
	for name := range bindings { // the problems are sorted by path at the end
		if _, ok := t.declared[name]; !ok {
			errs.Add(field.Invalid(root.Key(name), "binding %q names no parameter the tool declares (declared: %s)",
				name, strings.Join(slices.Sorted(maps.Keys(t.declared)), ", ")))
		}
	}
	for name, p := range t.declared {
		if _, bound := bindings[name]; !bound && p.RequireBinding {
			errs.Add(field.Required(root.Key(name), "parameter %q has require_binding: the capability must bind it", name))
		}
	}
	var seen map[string]bool
	for _, level := range t.levels {
		obj := bindings // when the level declares every bound name, as it usually does: no copy
		n := 0
		for name := range bindings {
			if _, ok := level.Property(name); ok {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if n < len(bindings) {
			obj = make(map[string]any, n)
			for name, v := range bindings {
				if _, ok := level.Property(name); ok {
					obj[name] = v
				}
			}
		}
		for _, v := range level.Validate(obj) {
			name := v.Path
			if i := strings.IndexByte(name, '.'); i >= 0 {
				name = name[:i]
			}
			if _, bound := obj[name]; !bound || v.Detail == "is required" && v.Path == name {
				continue // another parameter of the level, not bound: not the binding's fault
			}
			e := field.Invalid(root.Key(name), "binding %s", v.String())
			if !seen[e.Path+e.Detail] {
				if seen == nil {
					seen = map[string]bool{}
				}
				seen[e.Path+e.Detail] = true
				errs.Add(e)
			}
		}
	}
	return problemsOf(errs)
}

// problemsOf turns NewTask's field errors into Problems sorted by path; nil when there are none.
func problemsOf(errs field.List) []Problem {
	if len(errs) == 0 {
		return nil
	}
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		out = append(out, Problem{Path: e.Path, Type: string(e.Type), Detail: e.Detail})
	}
	sort.SliceStable(out, func(i, j int) bool { return comparePaths(out[i].Path, out[j].Path) < 0 })
	return out
}

// resolveBinding turns one binding as an agent manifest writes it into its value (see ResolveBindings).
func resolveBinding(ctx context.Context, src string, env BindingEnv) (any, error) {
	rt := map[string]any{"version": env.Runtime.Version, "api_root": env.Runtime.APIRoot,
		"dashboard_url": env.Runtime.DashboardURL}
	if tmpl, err := interp.Parse(src); err == nil && tmpl.HasRefs() {
		v, err := tmpl.Render(interp.ResolverFunc(func(ref interp.Ref) (any, error) {
			switch ref.Root {
			case interp.RootContext:
				return lookup(env.Context, ref.Steps), nil
			case interp.RootRuntime:
				return lookup(rt, ref.Steps), nil
			}
			return nil, fmt.Errorf("bindings may use only {context.*} and {runtime.*}")
		}))
		if err != nil {
			return nil, fmt.Errorf("tool: binding %q: %w", src, err)
		}
		return v, nil
	}
	vars := map[string]any{"context": env.Context, "runtime": rt}
	if env.Context == nil {
		vars["context"] = map[string]any{}
	}
	if !env.Now.IsZero() {
		vars["now"] = env.Now.UTC().Format(time.RFC3339)
	}
	v, err := celenv.EvalBinding(ctx, src, vars)
	if err != nil {
		return nil, fmt.Errorf("tool: binding %q: %w", src, err)
	}
	return v, nil
}
