// Package tool is the Go runtime for Common Agent Specification tool manifests
// (kind commonagents.info/v1beta2/tool).
//
// A host loads a manifest once with Load, which validates everything and compiles every template, JSON Schema and
// CEL expression, reporting all problems with field paths. The resulting Tool shows its actions to the LLM as
// functions (Functions) and describes them for the host's inventory (Catalog).
//
// Action backends live in subpackages of runtime and receive backends in subpackages of events; importing this
// package registers every built-in one except kubernetes_job, which hosts enable with a blank import of
// runtime/kubernetesjob.
package tool

import (
	// The built-in backends register themselves.
	_ "github.com/commonagents-go/tool/events/poll"
	_ "github.com/commonagents-go/tool/events/subscription"
	_ "github.com/commonagents-go/tool/events/webhook"
	_ "github.com/commonagents-go/tool/runtime/celexpr"
	_ "github.com/commonagents-go/tool/runtime/mcp"
	_ "github.com/commonagents-go/tool/runtime/openapi"
	_ "github.com/commonagents-go/tool/runtime/statefulsession"
	_ "github.com/commonagents-go/tool/runtime/statelesshttp"
	_ "github.com/commonagents-go/tool/runtime/subprocess"
)
