package main

import (
	"context"
	_ "embed"
	"flag"
	"io"
)

// manifestSchema is the JSON Schema (draft-07) of the manifest format. TestSchemaMatchesDecoder keeps its blocks
// in step with the structs the loader decodes into.
//
//go:embed manifest.schema.json
var manifestSchema []byte

var schemaCommand = command{
	name:     "schema",
	synopsis: "",
	summary:  "print the JSON Schema of the manifest format, for editors",
	detail: `Schema prints the JSON Schema (draft-07) of the tool manifest format. Save it and
point an editor at it, e.g. with yaml-language-server:
	tool schema > tool-manifest.schema.json
	# yaml-language-server: $schema=./tool-manifest.schema.json
The schema checks the structure; only 'tool validate' checks templates, CEL and references.`,
	run: runSchema,
}

func runSchema(_ context.Context, fs *flag.FlagSet, args []string, stdout, _ io.Writer) int {
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fs, "unexpected arguments: %q", rest)
	}
	if _, err := stdout.Write(manifestSchema); err != nil {
		return exitProblem
	}
	return exitOK
}
