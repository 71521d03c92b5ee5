package openapi

import (
	"fmt"
	"sort"
	"strings"

	"github.com/commonagents-go/tool/internal/funcname"
	"github.com/getkin/kin-openapi/openapi3"
)

// entry is one operation of a document with the action name it gets.
type entry struct {
	path, method string
	item         *openapi3.PathItem
	op           *openapi3.Operation
	name         string
}

// label names the operation in Skipped and in warnings, and is what a tie-breaking hash is taken of.
func (e *entry) label() string {
	if e.op.OperationID != "" {
		return e.op.OperationID
	}
	return e.method + " " + e.path
}

// baseName is an operation's action name before ties are broken (internal/funcname's rule): the operationId with
// every character outside [A-Za-z0-9_] made "_", runs collapsed and the ends trimmed; the method and path
// ("get_pets_petId") when there is no operationId or it comes out empty or starting with a digit; shortened to 64
// characters with a stable hash.
func baseName(path, method, operationID string) string {
	return funcname.Name(operationID, strings.ToLower(method)+" "+path)
}

// nameAll gives every entry its action name. Entries whose base names are the same keep them apart by a hash of
// their operationId, not by document order, so a name never shifts when the document grows elsewhere: an entry
// whose operationId is its base name verbatim keeps it, every other one gets "_" and 8 hex digits appended. It
// returns a warning per renamed entry (a tie broken, a name shortened) and the entries it could not name.
func nameAll(entries []*entry) (warnings []string, clash []*entry) {
	groups := map[string][]*entry{}
	for _, e := range entries {
		e.name = baseName(e.path, e.method, e.op.OperationID)
		groups[e.name] = append(groups[e.name], e)
		if clean := funcname.Clean(e.op.OperationID); len(clean) > funcname.MaxLen && e.op.OperationID != "" {
			warnings = append(warnings, fmt.Sprintf("operation %q is named %q: action names have at most %d characters",
				e.label(), e.name, funcname.MaxLen))
		}
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	taken := map[string]bool{}
	for _, n := range names {
		if len(groups[n]) == 1 {
			taken[n] = true
		}
	}
	for _, n := range names {
		g := groups[n]
		if len(g) == 1 {
			continue
		}
		for _, e := range g {
			tag := e.label()
			if e.op.OperationID == n {
				if !taken[n] {
					taken[n] = true
					continue
				}
				// The document gives this operationId twice (invalid OpenAPI): the later one in path order is
				// told apart by its method and path.
				tag = e.method + " " + e.path
			}
			e.name = funcname.Suffix(n, tag, funcname.MaxLen)
			if taken[e.name] {
				clash = append(clash, e)
				continue
			}
			taken[e.name] = true
			warnings = append(warnings, fmt.Sprintf("operation %q is named %q: other operations' names come out as %q too",
				e.label(), e.name, n))
		}
	}
	return warnings, clash
}
