package openapi

import (
	_ "embed"
	"sync"

	"github.com/commonagents-go/tool/runtime"
)

//go:embed schema.json
var configSchemaJSON []byte

var configSchema = sync.OnceValue(func() runtime.ConfigSchema { return runtime.MustConfigSchema(configSchemaJSON) })

// ConfigSchema returns the JSON Schema of the blocks this plugin reads, for tool.ManifestSchema and `tool schema`.
func (Backend) ConfigSchema() runtime.ConfigSchema { return configSchema() }

var _ runtime.Schemer = Backend{}
