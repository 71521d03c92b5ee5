package tool

import (
	"github.com/commonagents-go/tool/internal/manifestschema"
	"github.com/commonagents-go/tool/runtime"
)

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

func pluginSchema(kind string, plugin any) manifestschema.Plugin {
	p := manifestschema.Plugin{Kind: kind}
	if s, ok := plugin.(runtime.Schemer); ok {
		cs := s.ConfigSchema()
		p.Schema = &cs
	}
	return p
}
