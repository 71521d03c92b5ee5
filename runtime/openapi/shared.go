package openapi

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// sharedParts are the compiled fields of the top-level block, shared by every action of one document.
type sharedParts struct {
	path    *field.Path // the top-level block
	baseURL *interp.URL // base_url, nil when the document's servers decide
	headers map[string]*interp.Template
	timeout time.Duration
	bases   map[string]*interp.URL // compiled server URLs, by text
	files   fileOptions
}

// compileShared checks and compiles base_url, headers, timeout, files_from_mount and max_file_bytes of the
// top-level block at p.
func compileShared(c runtime.Checker, p *field.Path, s *Shared) (*sharedParts, field.List) {
	var errs field.List
	parts := &sharedParts{path: p, headers: map[string]*interp.Template{}, bases: map[string]*interp.URL{}}
	if s.BaseURL != "" {
		u, e := c.URL(p.Child("base_url"), s.BaseURL, "", runtime.ExecuteRoots...)
		errs = append(errs, e...)
		parts.baseURL = u
	}
	names := make([]string, 0, len(s.Headers))
	for name := range s.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		hp := p.Child("headers").Key(name)
		canonical := strings.ToLower(name)
		switch first, dup := seen[canonical]; {
		case !httpguts.ValidHeaderFieldName(name):
			errs.Add(field.Invalid(hp, "%q is not a valid HTTP header name", name))
			continue
		case dup:
			errs.Add(field.Duplicate(hp, "header %q is also given as %q (header names ignore case); keep one", name, first))
			continue
		}
		seen[canonical] = name
		t, e := c.Template(hp, s.Headers[name], runtime.ExecuteRoots...)
		errs = append(errs, e...)
		parts.headers[name] = t
	}
	d, de := httpspec.Duration(p.Child("timeout"), s.Timeout)
	errs.Add(de)
	parts.timeout = d
	parts.files = fileOptions{fromMount: s.FilesFromMount, maxBytes: s.MaxFileBytes}
	switch {
	case s.MaxFileBytes == 0:
		parts.files.maxBytes = DefaultFileBytes
	case s.MaxFileBytes < 0 || s.MaxFileBytes > maxFileBytes:
		errs.Add(field.Invalid(p.Child("max_file_bytes"), "must be between 1 and %d bytes", maxFileBytes))
	}
	return parts, errs
}

// base returns the compiled base URL of an operation: base_url when the block sets it, else the first server of
// the operation, its path item or the document (OpenAPI's order of precedence), with each server variable at its
// default. A relative server URL resolves against the document's URL; a document read from a file has none, so
// its relative servers need base_url.
func (s *sharedParts) base(c runtime.Checker, doc *openapi3.T, docURL string, item *openapi3.PathItem,
	op *openapi3.Operation) (*interp.URL, error) {
	if s.baseURL != nil {
		return s.baseURL, nil
	}
	servers := doc.Servers
	switch {
	case op.Servers != nil && len(*op.Servers) > 0:
		servers = *op.Servers
	case len(item.Servers) > 0:
		servers = item.Servers
	}
	raw := "/"
	if len(servers) > 0 && servers[0] != nil {
		raw = servers[0].URL
		for name, v := range servers[0].Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
	}
	if u := s.bases[raw]; u != nil {
		return u, nil
	}
	p := s.path.Child("base_url")
	abs, err := absolute(raw, docURL)
	if err != nil {
		return nil, field.Required(p, "%v: set base_url in the top-level openapi block", err)
	}
	// The server URL is literal text: braces left in it are not template tokens.
	src := strings.NewReplacer("{", "{{", "}", "}}").Replace(strings.TrimSuffix(abs, "/"))
	u, errs := c.URL(p, src, "", runtime.ExecuteRoots...)
	if len(errs) > 0 {
		return nil, field.Invalid(p, "the document's server URL %q cannot be used (%v): set base_url", abs, errs)
	}
	s.bases[raw] = u
	return u, nil
}

// absolute resolves a server URL against the document's URL.
func absolute(server, docURL string) (string, error) {
	su, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("the document's server URL %q is not a URL", server)
	}
	if su.IsAbs() {
		if su.Scheme != "http" && su.Scheme != "https" {
			return "", fmt.Errorf("the document's server URL %q is not http(s)", server)
		}
		return su.String(), nil
	}
	du, err := url.Parse(docURL)
	if err != nil || du.Scheme != "http" && du.Scheme != "https" {
		return "", fmt.Errorf("the document's server URL %q is relative and the document was not fetched over http(s)", server)
	}
	return du.ResolveReference(su).String(), nil
}
