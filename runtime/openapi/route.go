package openapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/net/http/httpguts"
)

// route is a document path split into what is sent and what only tells operations apart. Documents that give one
// URL several operations write the difference into the path: a fixed query ("/rest?method=flickr.photos.search",
// "/published/{project}?view=status", "/current?lat={lat}&lon={lon}") or a fragment, never sent on the wire
// ("/#X-Amz-Target=DynamoDB_20120810.GetItem", "/#Action=CreateIpam", "/tags/{arn}#tagKeys").
type route struct {
	path     string      // the URL path template
	query    []queryPair // the ?k=v pairs, in document order
	fragment string      // the text after #, unescaped
}

// queryPair is one pair of a path's query: a fixed value, or a template naming one of the operation's parameters.
type queryPair struct {
	key, value string
	param      string // the parameter named by a {name} value; "" for a fixed value
}

// fixed is a parameter whose value the path gives: sent on every call, never an argument.
type fixed struct {
	in, name, value string
}

// amzTarget is the header AWS JSON-protocol services read the operation from.
const amzTarget = "X-Amz-Target"

// splitRoute splits a document path at its first "?" and "#".
func splitRoute(path string) (route, error) {
	var r route
	rest, frag, hasFrag := strings.Cut(path, "#")
	if hasFrag {
		f, err := url.PathUnescape(frag)
		if err != nil {
			return r, fmt.Errorf("path %q has a fragment that is not valid escaped text", path)
		}
		r.fragment = f
	}
	p, query, hasQuery := strings.Cut(rest, "?")
	r.path = p
	if !hasQuery || query == "" {
		return r, nil
	}
	for pair := range strings.SplitSeq(query, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || key == "" {
			return r, fmt.Errorf("path %q has a query pair %q that is not valid escaped text", path, pair)
		}
		qp := queryPair{key: key, value: value}
		if m := pathTemplate.FindStringSubmatch(value); m != nil {
			if m[0] != value {
				return r, fmt.Errorf("path %q has a query value %q that mixes text and a template", path, v)
			}
			qp.param, qp.value = m[1], ""
		} else if strings.ContainsAny(value, "{}") {
			return r, fmt.Errorf("path %q has a query value %q that is not a template", path, v)
		}
		r.query = append(r.query, qp)
	}
	return r, nil
}

// bind applies the route's query and fragment to the operation's parameters: a fixed query pair wins over a
// query parameter of the same name (which is removed, so an LLM argument of that name is refused); a {name} value
// sends that parameter (even one the document declares in the path) under the pair's key, and makes it required;
// a fragment "k=v" fixes a declared parameter k to v, or, for X-Amz-Target, the header AWS JSON-protocol services
// read the operation from. It returns the parameters left and the fixed ones.
func (r route) bind(list []*param) ([]*param, []fixed, error) {
	var out []fixed
	drop := map[*param]bool{}
	for _, qp := range r.query {
		if qp.param == "" {
			for _, p := range list {
				if p.in == openapi3.ParameterInQuery && p.name == qp.key {
					drop[p] = true
				}
			}
			out = append(out, fixed{in: openapi3.ParameterInQuery, name: qp.key, value: qp.value})
			continue
		}
		var target *param
		for _, p := range list {
			if p.name == qp.param && (p.in == openapi3.ParameterInPath || p.in == openapi3.ParameterInQuery) {
				target = p
				break
			}
		}
		if target == nil {
			return nil, nil, fmt.Errorf("the path's query names the parameter %q, which is not declared", qp.param)
		}
		if target.in == openapi3.ParameterInPath {
			target.style, target.explode = openapi3.SerializationForm, true
		}
		target.in, target.name, target.required = openapi3.ParameterInQuery, qp.key, true
	}
	if k, v, ok := strings.Cut(r.fragment, "="); ok && k != "" {
		found := false
		for _, p := range list {
			if p.in == openapi3.ParameterInPath {
				continue
			}
			header := p.in == openapi3.ParameterInHeader && http.CanonicalHeaderKey(p.name) == http.CanonicalHeaderKey(k)
			if p.name == k || header {
				drop[p], found = true, true
				out = append(out, fixed{in: p.in, name: p.name, value: v})
				break
			}
		}
		if !found && http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(amzTarget) {
			out = append(out, fixed{in: openapi3.ParameterInHeader, name: amzTarget, value: v})
		}
	}
	for _, f := range out {
		if f.in != openapi3.ParameterInQuery && !httpguts.ValidHeaderFieldValue(f.value) {
			return nil, nil, fmt.Errorf("the path fixes %s %q to a value a header cannot carry", f.in, f.name)
		}
	}
	kept := list[:0]
	for _, p := range list {
		if !drop[p] {
			kept = append(kept, p)
		}
	}
	return kept, out, nil
}

// note says what the route adds to the path, for the action's description: the fixed values it sends and the
// parameters its query names.
func (r route) note(fixedList []fixed) string {
	var parts []string
	for _, f := range fixedList {
		parts = append(parts, fmt.Sprintf("%s %s=%s", f.in, f.name, f.value))
	}
	for _, qp := range r.query {
		if qp.param != "" {
			parts = append(parts, fmt.Sprintf("query %s={%s}", qp.key, qp.param))
		}
	}
	if len(parts) == 0 {
		if r.fragment == "" {
			return ""
		}
		return "Operation " + r.fragment + "."
	}
	return "Sends " + strings.Join(parts, ", ") + "."
}
