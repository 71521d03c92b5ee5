package openapi

import (
	"strings"

	"github.com/commonagents-go/tool/field"
	"github.com/getkin/kin-openapi/openapi3"
)

// Selection chooses the operations a top-level block expands into (extension). An operation is selected when it
// has one of Tags, or its operationId (or the action name made from it) matches one of the Operations patterns,
// or its path starts with one of Paths; when none of these three is given every operation is. Methods then keeps
// the selected operations with one of the methods. Only selected operations are converted and compiled; the
// others are counted in the load fact, not listed as skipped.
type Selection struct {
	// Tags are OpenAPI tags, compared exactly.
	Tags []string `json:"tags,omitempty"`
	// Operations are operationId patterns: "*" matches any run of characters ("pulls/*"), every other character
	// itself. A pattern also matches the action name an operation gets ("repos_get").
	Operations []string `json:"operations,omitempty"`
	// Paths are path-template prefixes, matched at a "/" boundary ("/repos/{owner}/{repo}/issues").
	Paths []string `json:"paths,omitempty"`
	// Methods are HTTP methods, any case.
	Methods []string `json:"methods,omitempty"`
}

// check reports malformed entries of the selection at p.
func (s *Selection) check(p *field.Path) field.List {
	var errs field.List
	for i, tag := range s.Tags {
		if tag == "" {
			errs.Add(field.Required(p.Child("tags").Index(i), "a tag must not be empty"))
		}
	}
	for i, pat := range s.Operations {
		if strings.Trim(pat, "*") == "" {
			errs.Add(field.Invalid(p.Child("operations").Index(i), "pattern %q selects every operation: leave operations out instead", pat))
		}
	}
	for i, prefix := range s.Paths {
		if !strings.HasPrefix(prefix, "/") {
			errs.Add(field.Invalid(p.Child("paths").Index(i), "path prefix %q must start with /", prefix))
		}
	}
	for i, m := range s.Methods {
		if !knownMethod(strings.ToUpper(m)) {
			errs.Add(field.Unsupported(p.Child("methods").Index(i), "%q is not an HTTP method of OpenAPI (use %s)", m,
				strings.Join(methodOrder, ", ")))
		}
	}
	return errs
}

func knownMethod(m string) bool {
	for _, k := range methodOrder {
		if k == m {
			return true
		}
	}
	return false
}

// selects reports whether the operation is selected; name is the action name it would get.
func (s *Selection) selects(path, method, name string, op *openapi3.Operation) bool {
	if s == nil {
		return true
	}
	if len(s.Methods) > 0 && !s.hasMethod(method) {
		return false
	}
	if len(s.Tags) == 0 && len(s.Operations) == 0 && len(s.Paths) == 0 {
		return true
	}
	for _, tag := range op.Tags {
		for _, want := range s.Tags {
			if tag == want {
				return true
			}
		}
	}
	for _, pat := range s.Operations {
		if op.OperationID != "" && glob(pat, op.OperationID) || glob(pat, name) {
			return true
		}
	}
	for _, prefix := range s.Paths {
		if underPrefix(path, prefix) {
			return true
		}
	}
	return false
}

func (s *Selection) hasMethod(method string) bool {
	for _, m := range s.Methods {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

// underPrefix reports whether path is prefix or lies below it.
func underPrefix(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix == "" || path == prefix || strings.HasPrefix(path, prefix+"/")
}

// glob matches s against pattern, where "*" matches any run of characters.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
