package tool

import (
	"github.com/commonagents-go/tool/internal/manifestschema"
	"github.com/commonagents-go/tool/runtime"
)

func pluginSchema(kind string, plugin any) manifestschema.Plugin {
	p := manifestschema.Plugin{Kind: kind}
	if s, ok := plugin.(runtime.Schemer); ok {
		cs := s.ConfigSchema()
		p.Schema = &cs
	}
	return p
}
