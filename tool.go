package tool

import (
	"github.com/commonagents-go/tool/internal/schema"
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
	warnings       func() []Problem // nil when there are none
}

func (t *Tool) index() {
	t.actionByName = make(map[string]*action, len(t.actions))
	for _, a := range t.actions {
		t.actionByName[a.def.Name] = a
	}
}

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
