package tool

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/interp"
)

// Tool is a loaded, validated and compiled manifest. It is immutable and safe for concurrent use; tasks are
// started from it.
type Tool struct {
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
