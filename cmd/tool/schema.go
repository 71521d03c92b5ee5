package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"

	"github.com/commonagents-go/tool"
)

var schemaCommand = command{
	name:     "schema",
	synopsis: "",
	summary:  "print the JSON Schema of the manifest format, for editors",
	detail: `Schema prints the JSON Schema (draft-07) of the tool manifest format. Save it and
point an editor at it, e.g. with yaml-language-server:
	tool schema > tool-manifest.schema.json
	# yaml-language-server: $schema=./tool-manifest.schema.json
It is built from the registered backends and receivers: each describes its own blocks.
The schema checks the structure; only 'tool validate' checks templates, CEL and references.`,
	run: runSchema,
}

func runSchema(_ context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fs, "unexpected arguments: %q", rest)
	}
	schema, err := tool.ManifestSchema() // the default registries: the built-ins, kubernetes_job's checking half
	if err != nil {
		fmt.Fprintln(stderr, "tool schema:", err)
		return exitProblem
	}
	if _, err := stdout.Write(schema); err != nil {
		return exitProblem
	}
	return exitOK
}
