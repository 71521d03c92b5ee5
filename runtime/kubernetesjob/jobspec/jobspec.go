// Package jobspec decodes and checks kubernetes_job blocks (SPEC §7.7) without client-go: the half of the
// kubernetes_job backend that Load needs. Package kubernetesjob runs the Jobs; a program that only checks
// manifests (the tool command) registers Validator instead and links no Kubernetes client, which keeps its memory
// at what a host without kubernetes_job uses.
package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Config is a kubernetes_job block, at action or top level; the action's fields win over the top-level ones.
type Config struct {
	// Namespace is the namespace the Job runs in (a template).
	Namespace string `json:"namespace,omitempty"`
	// Spec is a batch/v1 JobSpec, decoded strictly; every string in it is a template rendered as text.
	Spec any `json:"spec,omitempty"`
}

// Action is a prepared kubernetes_job action.
type Action struct {
	// Namespace renders the Job's namespace.
	Namespace *interp.Template
	// spec renders the JobSpec's JSON tree; static is the decoded spec when it has no tokens.
	spec   node
	static *batchv1.JobSpec
}

// Traits reports remote compute with unknown effects: destructive, open world.
func (*Action) Traits() runtime.Traits {
	return runtime.Traits{Owner: "kubernetes", Destructive: true, OpenWorld: true,
		Capabilities: []string{"network", "write"}}
}

// Prepare merges the action's block over the top-level one, checks the namespace, parses every string of the
// spec as a template and decodes the spec strictly as a batch/v1 JobSpec, with each token standing for text. The
// Action is never nil; the error lists every problem found.
func Prepare(blk *runtime.Block) (*Action, error) {
	var own, shared Config
	errs := blk.Decode(&own)
	errs = append(errs, blk.DecodeShared(&shared)...)
	a := &Action{}
	nsPath, specPath := blk.Path.Child("namespace"), blk.Path.Child("spec")
	ns, spec := own.Namespace, own.Spec
	if ns == "" && shared.Namespace != "" {
		ns, nsPath = shared.Namespace, blk.SharedPath.Child("namespace")
	}
	if spec == nil && shared.Spec != nil {
		spec, specPath = shared.Spec, blk.SharedPath.Child("spec")
	}
	if ns == "" {
		errs.Add(field.Required(nsPath, "namespace is required"))
	} else {
		t, e := blk.Check.Template(nsPath, ns, runtime.ExecuteRoots...)
		errs = append(errs, e...)
		if t != nil && !t.HasRefs() {
			for _, msg := range validation.IsDNS1123Label(t.Literal()) {
				errs.Add(field.Invalid(nsPath, "namespace %q is not a valid namespace name: %s", t.Literal(), msg))
			}
		}
		a.Namespace = t
	}
	if spec == nil {
		errs.Add(field.Required(specPath, "spec is required: a batch/v1 JobSpec"))
		return a, errs.Err()
	}
	if _, ok := spec.(map[string]any); !ok {
		errs.Add(field.Invalid(specPath, "spec must be an object (a batch/v1 JobSpec)"))
		return a, errs.Err()
	}
	a.spec, a.static, errs = prepareSpec(blk.Check, specPath, spec, errs)
	return a, errs.Err()
}

// prepareSpec compiles spec's templates and decodes it strictly; static is the decoded spec when it has no token.
func prepareSpec(check runtime.Checker, p *field.Path, spec any, errs field.List) (node, *batchv1.JobSpec, field.List) {
	var refs bool
	n := compile(check, p, spec, &errs, &refs)
	probe, err := decodeSpec(n.probe())
	if err != nil {
		return n, nil, append(errs, specProblems(p, err)...)
	}
	errs = append(errs, checkSpec(p, probe)...)
	if refs {
		return n, nil, errs
	}
	return n, probe, errs
}

// ValidateShared decodes and checks the top-level kubernetes_job block once, whether or not an action uses it.
func ValidateShared(blk *runtime.Block) error {
	var shared Config
	errs := blk.DecodeShared(&shared)
	if len(errs) > 0 {
		return errs.Err()
	}
	if shared.Namespace != "" {
		_, e := blk.Check.Template(blk.SharedPath.Child("namespace"), shared.Namespace, runtime.ExecuteRoots...)
		errs = append(errs, e...)
	}
	switch shared.Spec.(type) {
	case nil:
	case map[string]any:
		_, _, errs = prepareSpec(blk.Check, blk.SharedPath.Child("spec"), shared.Spec, errs)
	default:
		errs.Add(field.Invalid(blk.SharedPath.Child("spec"), "spec must be an object (a batch/v1 JobSpec)"))
	}
	return errs.Err()
}

// checkSpec reports what the API server would refuse at every call, found once at load instead.
func checkSpec(p *field.Path, s *batchv1.JobSpec) field.List {
	var errs field.List
	pod := p.Child("template", "spec")
	if len(s.Template.Spec.Containers) == 0 {
		errs.Add(field.Required(pod.Child("containers"), "the Job's pod needs at least one container"))
	}
	for i, c := range s.Template.Spec.Containers {
		if c.Name == "" {
			errs.Add(field.Required(pod.Child("containers").Index(i).Child("name"), "a container needs a name"))
		}
		if c.Image == "" {
			errs.Add(field.Required(pod.Child("containers").Index(i).Child("image"), "a container needs an image"))
		}
	}
	if d := s.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs.Add(field.Invalid(p.Child("activeDeadlineSeconds"), "activeDeadlineSeconds must be positive, not %d", *d))
	}
	switch s.Template.Spec.RestartPolicy {
	case "", "Never", "OnFailure", probeText:
	default:
		errs.Add(field.Unsupported(pod.Child("restartPolicy"), "a Job's restartPolicy must be Never or OnFailure"))
	}
	return errs
}

// decodeSpec decodes a JSON tree into a JobSpec as the API server does: field names case-sensitive, unknown and
// duplicate fields refused.
func decodeSpec(tree any) (*batchv1.JobSpec, error) {
	data, err := json.Marshal(tree)
	if err != nil {
		return nil, err
	}
	var s batchv1.JobSpec
	strict, err := kjson.UnmarshalStrict(data, &s)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return &s, nil
}

// specProblems turns a decoding error into problems at the paths it names below p.
func specProblems(p *field.Path, err error) field.List {
	var errs field.List
	for _, e := range unjoin(err) {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](e); ok && te.Field != "" {
			want := te.Type.String()
			if strings.Contains(want, "int") || strings.Contains(want, "float") {
				want = "a number (a template renders text, so it cannot fill this field)"
			}
			errs.Add(field.Invalid(subPath(p, te.Field), "must be %s, not a JSON %s", want, te.Value))
			continue
		}
		msg := e.Error()
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			if unq, err := strconv.Unquote(name); err == nil {
				errs.Add(field.Unsupported(subPath(p, unq), "unknown field in a batch/v1 JobSpec"))
				continue
			}
		}
		if name, ok := strings.CutPrefix(msg, "duplicate field "); ok {
			if unq, err := strconv.Unquote(name); err == nil {
				errs.Add(field.Duplicate(subPath(p, unq), "duplicate field"))
				continue
			}
		}
		errs.Add(field.Invalid(p, "not a valid batch/v1 JobSpec: %s", msg))
	}
	return errs
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// subPath extends p with a decoder path such as template.spec.containers[0].image.
func subPath(p *field.Path, s string) *field.Path {
	for part := range strings.SplitSeq(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			p = p.Child(name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				p = p.Index(n)
			}
			_, rest, _ = strings.Cut(after, "[")
		}
	}
	return p
}

// probeText stands for every templated string when the spec is decoded at load: it is a valid quantity and a
// valid int-or-string, so templates may fill such fields; a number field is refused whatever stands in it.
const probeText = "0"

// node is one value of the spec's JSON tree, its string leaves compiled as templates.
type node struct {
	tmpl  *interp.Template // a string with tokens
	konst any              // a scalar or a string without tokens
	keys  []string         // an object's keys, sorted; kids holds their values
	kids  []node           // object values or array elements
	obj   bool
	arr   bool
}

func compile(check runtime.Checker, p *field.Path, v any, errs *field.List, refs *bool) node {
	switch v := v.(type) {
	case string:
		t, e := check.Template(p, v, runtime.ExecuteRoots...)
		*errs = append(*errs, e...)
		if t == nil || !t.HasRefs() {
			if t != nil {
				return node{konst: t.Literal()}
			}
			return node{konst: v}
		}
		*refs = true
		return node{tmpl: t}
	case map[string]any:
		n := node{obj: true, keys: make([]string, 0, len(v))}
		for k := range v {
			n.keys = append(n.keys, k)
		}
		slices.Sort(n.keys)
		for _, k := range n.keys {
			n.kids = append(n.kids, compile(check, p.Key(k), v[k], errs, refs))
		}
		return n
	case []any:
		n := node{arr: true, kids: make([]node, 0, len(v))}
		for i, e := range v {
			n.kids = append(n.kids, compile(check, p.Index(i), e, errs, refs))
		}
		return n
	}
	return node{konst: v}
}

// probe returns the tree with probeText for every template.
func (n *node) probe() any {
	v, _ := n.render(nil, true)
	return v
}

// render returns the tree with every template rendered as text.
func (n *node) render(r interp.Resolver, probe bool) (any, error) {
	switch {
	case n.tmpl != nil:
		if probe {
			return probeText, nil
		}
		return n.tmpl.RenderString(r)
	case n.obj:
		m := make(map[string]any, len(n.keys))
		for i := range n.kids {
			v, err := n.kids[i].render(r, probe)
			if err != nil {
				return nil, err
			}
			m[n.keys[i]] = v
		}
		return m, nil
	case n.arr:
		s := make([]any, len(n.kids))
		for i := range n.kids {
			v, err := n.kids[i].render(r, probe)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	}
	return n.konst, nil
}

// RenderSpec builds the call's JobSpec. A value that makes the spec invalid (a quantity that does not parse) is a
// recoverable invalid_arguments error.
func (a *Action) RenderSpec(r interp.Resolver) (*batchv1.JobSpec, error) {
	if a.static != nil {
		return a.static.DeepCopy(), nil
	}
	tree, err := a.spec.render(r, false)
	if err != nil {
		return nil, err
	}
	s, err := decodeSpec(tree)
	if err != nil {
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "the arguments make an invalid Job spec: %s",
			fmt.Sprint(specProblems(field.NewPath("spec"), err)))
	}
	return s, nil
}
