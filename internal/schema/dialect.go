package schema

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Dialect is a JSON Schema dialect (draft). A schema's root `$schema` names its dialect; Options.Dialect is the one
// used when it names none (SPEC §3.1: draft-07 for a manifest, 2020-12 for MCP and OpenAPI 3.1).
type Dialect uint8

// The supported dialects, oldest first. The zero value is Draft7, the dialect of a manifest's schemas.
const (
	Draft7 Dialect = iota
	Draft4
	Draft6
	Draft2019
	Draft2020
)

// dialectURLs maps each dialect to the `$schema` URI that names it.
var dialectURLs = map[Dialect]string{
	Draft4:    "http://json-schema.org/draft-04/schema#",
	Draft6:    "http://json-schema.org/draft-06/schema#",
	Draft7:    "http://json-schema.org/draft-07/schema#",
	Draft2019: "https://json-schema.org/draft/2019-09/schema",
	Draft2020: "https://json-schema.org/draft/2020-12/schema",
}

// URL returns the `$schema` URI that names d.
func (d Dialect) URL() string { return dialectURLs[d] }

// String returns the dialect's short name, e.g. "draft-07" or "2020-12".
func (d Dialect) String() string {
	switch d {
	case Draft4:
		return "draft-04"
	case Draft6:
		return "draft-06"
	case Draft2019:
		return "2019-09"
	case Draft2020:
		return "2020-12"
	}
	return "draft-07"
}

// ParseDialect returns the dialect a `$schema` (or OpenAPI jsonSchemaDialect) URI names. The scheme and an empty
// fragment do not matter: "https://json-schema.org/draft-07/schema" names draft-07.
func ParseDialect(uri string) (Dialect, bool) {
	u := strings.TrimSuffix(uri, "#")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	switch u {
	case "json-schema.org/draft-04/schema":
		return Draft4, true
	case "json-schema.org/draft-06/schema":
		return Draft6, true
	case "json-schema.org/draft-07/schema":
		return Draft7, true
	case "json-schema.org/draft/2019-09/schema":
		return Draft2019, true
	case "json-schema.org/draft/2020-12/schema":
		return Draft2020, true
	}
	return 0, false
}

// modern reports whether d is 2019-09 or later: `$ref` siblings apply, `format` is an annotation, and the
// keywords of the applicator vocabulary's later revisions exist.
func (d Dialect) modern() bool { return d == Draft2019 || d == Draft2020 }

func (d Dialect) draft() *jsonschema.Draft {
	switch d {
	case Draft4:
		return jsonschema.Draft4
	case Draft6:
		return jsonschema.Draft6
	case Draft2019:
		return jsonschema.Draft2019
	case Draft2020:
		return jsonschema.Draft2020
	}
	return jsonschema.Draft7
}
