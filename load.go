package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/internal/yamlpos"
	"sigs.k8s.io/yaml"
)

// maxManifestBytes bounds the size of a manifest Load accepts.
const maxManifestBytes = 4 << 20

// maxAliasNodes bounds how many nodes YAML aliases may add to a manifest once expanded. Load counts them before
// expanding anything, so a "billion laughs" manifest is refused at the cost of its own size.
const maxAliasNodes = 10_000

// readManifest reads a manifest file; one larger than maxManifestBytes is refused without being read.
func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tool: %w", err)
	}
	defer f.Close()
	refuse := func(size int64) error {
		return &ValidationError{Problems: []Problem{{Type: string(field.TypeInvalid), Detail: tooLarge(size)}}}
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > maxManifestBytes {
		return nil, refuse(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1)) // the size of a pipe or a device is not known
	switch {
	case err != nil:
		return nil, fmt.Errorf("tool: %w", err)
	case len(data) > maxManifestBytes:
		return nil, refuse(int64(len(data)))
	}
	return data, nil
}

// tooLarge is the detail of a manifest refused for its size.
func tooLarge(size int64) string {
	return fmt.Sprintf("the manifest is %d bytes, larger than the limit of %d", size, maxManifestBytes)
}

// loader holds the state of one Load.
type loader struct {
	ctx   context.Context
	opts  *options
	src   []byte
	doc   *yamlpos.Document // the source's nodes, when they were read to count aliases
	index *yamlpos.Index    // built on first need
	// unlocated is set when the source was refused before it was parsed (too large, too many aliases): its
	// problems are not located, which would parse it.
	unlocated bool

	errs, warns field.List

	m              *Manifest
	settingsSchema *schema.Schema
	settingNames   []string
	rootParams     *schema.Schema
	rootProperties []schema.Property
	// hasSettingsSchema is set when the manifest declares settings, even if that schema has problems.
	hasSettingsSchema bool
	// syntaxLines holds the line of YAML syntax problems, which have no field path to locate them by.
	syntaxLines map[*field.Error]int
	// allParams is the allow-list namespace: every parameter name declared at any level.
	allParams map[string]bool
}

var namePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

func (l *loader) warn(w *field.Error) { l.warns.Add(w) }

func (l *loader) load() *Tool {
	doc := l.parse()
	if doc == nil || l.ctx.Err() != nil {
		return nil
	}
	l.m = &Manifest{}
	root, _ := doc.(map[string]any)
	l.errs = append(l.errs, decode.Into(l.coreOf(root, doc), l.m, nil)...)
	m := l.m

	l.identity(root)
	var settingProps []schema.Property
	l.settingsSchema, settingProps = l.schema(root["settings"], field.NewPath("settings"))
	l.hasSettingsSchema = root["settings"] != nil
	for _, p := range settingProps {
		l.settingNames = append(l.settingNames, p.Name)
	}
	l.rootParams, l.rootProperties = l.schema(root["parameters"], field.NewPath("parameters"))

	t := &Tool{manifest: m, opts: l.opts, settingsSchema: l.settingsSchema, rootParams: l.rootParams}
	t.settings = l.settings()

	actionDocs, _ := root["actions"].([]any)
	eventDocs, _ := root["events"].([]any)
	l.collectParams(actionDocs, eventDocs)
	l.uniqueNames()
	t.actions = l.actions(root, actionDocs)
	l.sharedBlocks(root, t.actions)
	l.expand(root, t)
	t.events = l.events(eventDocs)
	t.index()
	return t
}

// parse turns YAML or JSON into decoded JSON, reporting syntax errors, duplicate keys and YAML 1.1 boolean keys.
func (l *loader) parse() any {
	if len(l.src) > maxManifestBytes {
		l.unlocated = true
		l.errs.Add(field.Invalid(nil, "%s", tooLarge(int64(len(l.src)))))
		return nil
	}
	if !l.aliasesBounded() {
		return nil
	}
	if yamlpos.MayHaveBoolKeys(l.src) {
		for _, p := range l.positions().BoolKeys() {
			name := p[strings.LastIndexAny(p, ".[")+1:]
			l.errs.Add(&field.Error{Type: field.TypeInvalid, Path: p, Detail: fmt.Sprintf(
				"unquoted key %s is read as a boolean by YAML 1.1; quote it (\"%s\")", name, name)})
		}
	}
	js, err := yaml.YAMLToJSONStrict(l.src)
	if err != nil {
		dups := l.positions().Duplicates()
		for _, p := range dups {
			l.errs.Add(field.Duplicate(pathOf(p), "key given twice in the same mapping"))
		}
		if len(dups) == 0 {
			l.syntaxErrors(err)
			return nil
		}
		if js, err = yaml.YAMLToJSON(l.src); err != nil {
			l.syntaxErrors(err)
			return nil
		}
	}
	doc, err := decode.JSON(js)
	if err != nil {
		l.errs.Add(field.Invalid(nil, "cannot decode the manifest: %v", err))
		return nil
	}
	if _, ok := doc.(map[string]any); !ok {
		l.errs.Add(field.Invalid(nil, "the manifest must be a mapping of fields (kind, namespace, name, ...)"))
		return nil
	}
	return doc
}

var lineRef = regexp.MustCompile(`line (\d+)(?::(\d+))?: ?`)

// syntaxErrors reports a YAML parser error, one problem per line it names.
func (l *loader) syntaxErrors(err error) {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	for _, line := range strings.Split(strings.TrimPrefix(msg, "unmarshal errors:\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		e := &field.Error{Type: field.TypeInvalid, Detail: "YAML: " + lineRef.ReplaceAllString(line, "")}
		if m := lineRef.FindStringSubmatch(line); m != nil {
			e.Detail = fmt.Sprintf("YAML syntax error at line %s: %s", m[1], lineRef.ReplaceAllString(line, ""))
			if l.syntaxLines == nil {
				l.syntaxLines = map[*field.Error]int{}
			}
			l.syntaxLines[e], _ = strconv.Atoi(m[1])
		}
		l.errs.Add(e)
	}
}

func pathOf(rendered string) *field.Path {
	// A rendered path is only re-used as a string; wrap it so field helpers accept it.
	return field.NewPath(rendered)
}

func (l *loader) positions() *yamlpos.Index {
	if l.index == nil {
		if l.doc == nil {
			l.doc = yamlpos.Parse(l.src)
		}
		l.index = l.doc.Index()
	}
	return l.index
}

// mayAnchor and mayAlias match a YAML anchor (&name) and an alias (*name) where a node may start; a source without both has
// no alias to expand.
var mayAnchor, mayAlias = regexp.MustCompile(`(^|[\s\[{,])&[^\s,\[\]{}]`), regexp.MustCompile(`(^|[\s\[{,])\*[^\s,\[\]{}]`)

// aliasesBounded counts what the source's aliases would add once expanded, before anything expands them, and
// reports false (with a problem) when that is over maxAliasNodes.
func (l *loader) aliasesBounded() bool {
	if !mayAnchor.Match(l.src) || !mayAlias.Match(l.src) {
		return true
	}
	l.doc = yamlpos.Parse(l.src)
	e := l.doc.Expand(maxAliasNodes)
	if !e.Over {
		return true
	}
	l.unlocated = true
	err := field.Invalid(nil, "YAML aliases would expand the manifest by more than %d nodes (the alias at line %d, column %d)",
		maxAliasNodes, e.At.Line, e.At.Column)
	l.syntaxLines = map[*field.Error]int{err: e.At.Line}
	l.errs.Add(err)
	return false
}

func (l *loader) identity(root map[string]any) {
	m := l.m
	switch {
	case root["kind"] != nil && m.Kind == "":
	case m.Kind == "":
		l.errs.Add(field.Required(field.NewPath("kind"), "kind is required: %q", ManifestKind))
	case m.Kind != ManifestKind:
		l.errs.Add(field.Unsupported(field.NewPath("kind"), "kind must be %q", ManifestKind))
	}
	if root["namespace"] == nil {
		l.errs.Add(field.Required(field.NewPath("namespace"), "namespace is required"))
	}
	switch {
	case root["name"] == nil:
		l.errs.Add(field.Required(field.NewPath("name"), "name is required"))
	case m.Name != "" && !namePattern.MatchString(m.Name):
		l.errs.Add(field.Invalid(field.NewPath("name"), "name must match %s", namePattern))
	}
	if root["description"] == nil {
		l.errs.Add(field.Required(field.NewPath("description"), "description is required"))
	}
}

// schema compiles a parameters or settings schema; nil when absent. When the schema has problems it still
// returns the property names it declares, so references to them are not reported a second time.
func (l *loader) schema(doc any, p *field.Path) (*schema.Schema, []schema.Property) {
	if doc == nil {
		return nil, nil
	}
	s, errs := schema.Compile(doc, p, schema.Options{Parameters: true})
	l.errs = append(l.errs, errs...)
	if s != nil {
		return s, s.Properties()
	}
	var props []schema.Property
	if m, ok := doc.(map[string]any); ok {
		if declared, ok := m["properties"].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(declared)) {
				prop, _ := declared[name].(map[string]any)
				props = append(props, schema.Property{Name: name, RequireBinding: prop["require_binding"] == true})
			}
		}
	}
	return nil, props
}

func (l *loader) settingKeys() []string { return l.settingNames }

// settings validates WithSettings against the schema and back-fills defaults (SPEC §3.2).
func (l *loader) settings() map[string]any {
	given := l.opts.settings
	if given == nil {
		given = map[string]any{}
	}
	s := l.settingsSchema
	if s == nil || !l.opts.hasSettings {
		if s != nil {
			return s.ApplyDefaults(given)
		}
		return given
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		if _, ok := s.Property(k); !ok {
			l.errs.Add(field.Unsupported(field.NewPath("settings").Key(k),
				"setting %q is not declared in the settings schema", k))
		}
	}
	filled := s.ApplyDefaults(given)
	for _, v := range s.Validate(filled) {
		p := field.NewPath("settings")
		if name := declaredPrefix(v.Path, l.settingNames); name != "" {
			p = p.Key(name)
		}
		typ, detail := field.TypeInvalid, "setting "+v.String()
		if v.Detail == "is required" {
			typ = field.TypeRequired
		} else if prop, ok := s.Property(declaredPrefix(v.Path, l.settingNames)); ok && prop.Secret {
			// A violation inside a secret may quote part of it (an object key): say only that it is wrong.
			detail = fmt.Sprintf("setting %q does not match its schema (details withheld: the setting is secret)", prop.Name)
		}
		l.errs.Add(&field.Error{Type: typ, Path: p.String(), Detail: detail})
	}
	return filled
}

// declaredPrefix returns the longest declared name that path is or starts with ("github.token" for the violation
// path "github.token" or "github.token.x"), so dotted setting keys are never split.
func declaredPrefix(path string, declared []string) string {
	best := ""
	for _, name := range declared {
		if (path == name || strings.HasPrefix(path, name+".")) && len(name) > len(best) {
			best = name
		}
	}
	return best
}

// collectParams gathers every parameter name declared at any level: the allow-list namespace filters see.
func (l *loader) collectParams(actionDocs, eventDocs []any) {
	l.allParams = map[string]bool{}
	for _, p := range l.rootProperties {
		l.allParams[p.Name] = true
	}
	for _, docs := range [][]any{actionDocs, eventDocs} {
		for _, d := range docs {
			m, _ := d.(map[string]any)
			if params, ok := m["parameters"].(map[string]any); ok {
				if props, ok := params["properties"].(map[string]any); ok {
					for name := range props {
						l.allParams[name] = true
					}
				}
			}
		}
	}
}

// uniqueNames checks names and that actions and events share no name (they share the include namespace).
func (l *loader) uniqueNames() {
	seen := map[string]string{}
	check := func(p *field.Path, name string) {
		switch {
		case name == "":
			l.errs.Add(field.Required(p, "name is required"))
			return
		case !namePattern.MatchString(name):
			l.errs.Add(field.Invalid(p, "name must match %s", namePattern))
		}
		if first, dup := seen[name]; dup {
			l.errs.Add(field.Duplicate(p, "%q is already the name of %s (actions and events share one namespace)", name, first))
			return
		}
		seen[name] = p.String()
	}
	for i, a := range l.m.Actions {
		check(field.NewPath("actions").Index(i).Child("name"), a.Name)
	}
	for i, e := range l.m.Events {
		check(field.NewPath("events").Index(i).Child("name"), e.Name)
	}
}

// problems turns field errors into sorted, de-duplicated Problems with source positions.
func (l *loader) problems(errs field.List) []Problem {
	seen := map[string]bool{}
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		key := string(e.Type) + "\x00" + e.Path + "\x00" + e.Detail
		if seen[key] {
			continue
		}
		seen[key] = true
		p := Problem{Path: e.Path, Type: string(e.Type), Detail: e.Detail}
		if l.unlocated {
			p.Line = l.syntaxLines[e]
		} else if pos, ok := l.positions().Find(e.Path); ok {
			p.Line, p.Column = pos.Line, pos.Column
		} else if line := l.syntaxLines[e]; line > 0 {
			p.Line = line
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if c := comparePaths(out[i].Path, out[j].Path); c != 0 {
			return c < 0
		}
		return out[i].Detail < out[j].Detail
	})
	return out
}

var pathNumber = regexp.MustCompile(`\[(\d+)\]`)

// comparePaths orders paths with list indices compared as numbers, so actions[2] sorts before actions[10].
func comparePaths(a, b string) int {
	pad := func(s string) string {
		return pathNumber.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(m[1 : len(m)-1])
			return fmt.Sprintf("[%09d]", n)
		})
	}
	return strings.Compare(pad(a), pad(b))
}

func (l *loader) compileCEL(scope celenv.Scope, expr string) (*celenv.Program, error) {
	return celenv.Compile(scope, expr, celenv.Limits{Cost: l.opts.limits.CELCost, Size: l.opts.limits.CELBytes})
}

// knownPackages names the package to import for built-in kinds that are not registered by default.
var knownPackages = map[string]string{
	"kubernetes_job": "github.com/commonagents-go/tool/runtime/kubernetesjob",
}

// unknownKind reports a block key no backend is registered for, naming the registered ones.
func unknownKind(p *field.Path, what, kind string, registered []string) *field.Error {
	if pkg, ok := knownPackages[kind]; ok {
		return field.Unsupported(p, "the %s backend is not registered: import _ %q in the host program", kind, pkg)
	}
	return field.Unsupported(p, "unknown %s %q (registered: %s)", what, kind, strings.Join(registered, ", "))
}

// exactlyOne reports a block that must hold exactly one key and returns that key, or "".
func exactlyOne(p *field.Path, what string, block map[string]any, present bool, registered []string) (string, *field.Error) {
	switch {
	case !present:
		return "", field.Required(p, "%s is required: name exactly one of %s", p, strings.Join(registered, ", "))
	case len(block) == 0:
		return "", field.Required(p, "%s must name exactly one %s (one of %s)", p, what, strings.Join(registered, ", "))
	case len(block) > 1:
		return "", field.Invalid(p, "%s must name exactly one %s, found %s", p, what, strings.Join(slices.Sorted(maps.Keys(block)), ", "))
	}
	for k := range block {
		return k, nil
	}
	return "", nil
}

func (l *loader) duration(p *field.Path, s string) time.Duration {
	d, e := httpspec.Duration(p, s)
	l.errs.Add(e)
	return d
}

func asMap(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

// blockErrors converts what Prepare returned into problems at p.
func blockErrors(p *field.Path, err error) field.List {
	if err == nil {
		return nil
	}
	var list field.List
	if errors.As(err, &list) {
		return list
	}
	var one *field.Error
	if errors.As(err, &one) {
		return field.List{one}
	}
	return field.List{field.Invalid(p, "%v", err)}
}
