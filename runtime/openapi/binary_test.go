package openapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"strings"
	"sync"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/facts"
)

// binaryDoc has raw bodies (application/octet-stream, */*, XML or text, image/*), a multipart body with file parts
// and a multipart/mixed body, which Invoke cannot send.
const binaryDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/blobs/{name}":{"put":{"operationId":"putBlob","parameters":[{"name":"name","in":"path","required":true,"schema":{"type":"string"}}],
  "requestBody":{"required":true,"description":"The blob.","content":{"application/octet-stream":{"schema":{"type":"string","format":"binary"}}}},"responses":{"200":{"description":"ok"}}}},
"/any":{"post":{"operationId":"postAny","requestBody":{"required":true,"content":{"*/*":{"schema":{"type":"string","format":"binary"}}}},"responses":{"200":{"description":"ok"}}}},
"/doc":{"post":{"operationId":"postDoc","requestBody":{"content":{"application/xml":{"schema":{"type":"object"}},"text/plain":{"schema":{"type":"string"}}}},"responses":{"200":{"description":"ok"}}}},
"/image":{"post":{"operationId":"postImage","requestBody":{"required":true,"content":{"image/*":{"schema":{"type":"string","format":"binary"}}}},"responses":{"200":{"description":"ok"}}}},
"/upload":{"post":{"operationId":"upload","requestBody":{"required":true,"content":{"multipart/form-data":{
  "encoding":{"photo":{"contentType":"image/png, image/jpeg"}},
  "schema":{"type":"object","required":["photo"],"properties":{"title":{"type":"string"},
    "photo":{"type":"string","format":"binary","description":"The photo."},
    "attachments":{"type":"array","items":{"type":"string","format":"binary"}}}}}}},"responses":{"200":{"description":"ok"}}}},
"/mixed":{"post":{"operationId":"mixed","requestBody":{"content":{"multipart/mixed":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}}
}}`

// memMount is a task's mount held in memory. Open counts the bytes its readers hand out, so a test can tell that a
// read stopped at the bound.
type memMount struct {
	files map[string]string
	mu    sync.Mutex
	read  int
}

func (m *memMount) Read(_ context.Context, p string) (string, error) {
	if s, ok := m.files[p]; ok {
		return s, nil
	}
	return "", fs.ErrNotExist
}

func (m *memMount) Write(context.Context, string, string) (string, error) {
	return "", fs.ErrPermission
}

func (m *memMount) Open(_ context.Context, p string) (io.ReadCloser, error) {
	s, ok := m.files[p]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return io.NopCloser(&countingReader{r: strings.NewReader(s), m: m}), nil
}

func (m *memMount) bytesRead() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.read
}

type countingReader struct {
	r io.Reader
	m *memMount
}

func (c *countingReader) Read(p []byte) (int, error) {
	if len(p) > 16 { // small reads, so a reader that read everything would show
		p = p[:16]
	}
	n, err := c.r.Read(p)
	c.m.mu.Lock()
	c.m.read += n
	c.m.mu.Unlock()
	return n, err
}

var _ celenv.MountOpener = (*memMount)(nil)

// binaryTool loads binaryDoc with the block lines given and returns it with a task over mount.
func binaryTool(t *testing.T, srv *server, block string, mount celenv.Mount, obs tool.Observer) (*tool.Tool, *tool.Task) {
	t.Helper()
	opts := []tool.Option{tool.WithHTTPClient(srv.Client())}
	if obs != nil {
		opts = append(opts, tool.WithObserver(obs))
	}
	tl, err := tool.Load(context.Background(), []byte(docManifest(t, srv, binaryDoc, block, "")), opts...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	cfg := tool.TaskConfig{}
	if mount != nil {
		cfg.Mount = &tool.Mount{Files: mount}
	}
	task, err := tl.NewTask(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Close(context.Background()) })
	return tl, task
}

// schemaOf returns the properties and required list of an action's function.
func schemaOf(t *testing.T, tl *tool.Tool, action string) (map[string]json.RawMessage, []string) {
	t.Helper()
	f, ok := functionByAction(tl.Functions(tool.Capability{}), action)
	if !ok {
		t.Fatalf("no function for %s", action)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(f.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties, s.Required
}

func call(t *testing.T, task *tool.Task, action string, args map[string]any) *tool.Result {
	t.Helper()
	res, err := task.Invoke(context.Background(), action, args)
	if err != nil {
		t.Fatalf("Invoke %s: %v", action, err)
	}
	return res
}

// part is one part of a multipart body as the server received it.
type part struct{ name, filename, contentType, data string }

func parts(t *testing.T, r received) []part {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	var out []part
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		out = append(out, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(data)})
	}
}

// TestRawBody: a body in a single-part media type that is not JSON or a form is sent from the body argument, as
// text or decoded from base64, in a media type the operation declares; without files_from_mount no path argument
// is offered, and one passed is refused.
func TestRawBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	obs := &factLog{}
	tl, task := binaryTool(t, srv, "", &memMount{files: map[string]string{"a.bin": "secret bytes"}}, obs)

	skipped := tl.Skipped()
	if len(skipped) != 1 || skipped[0].Name != "mixed" || !strings.Contains(skipped[0].Reason, "multipart/mixed") {
		t.Errorf("Skipped() = %+v, want only mixed", skipped)
	}
	if got := obs.named(facts.ActionSkipped); len(got) != 1 || got[0].Data["name"] != "mixed" {
		t.Errorf("skipped facts = %+v", got)
	}
	props, required := schemaOf(t, tl, "putBlob")
	if _, has := props["body_path"]; has {
		t.Errorf("putBlob offers body_path without files_from_mount: %s", props["body_path"])
	}
	if _, has := props["body_content_type"]; has {
		t.Errorf("putBlob offers body_content_type for its one media type")
	}
	if !strings.Contains(string(props["body_encoding"]), "base64") || !strings.Contains(string(props["body"]), `"type":"string"`) ||
		strings.Join(required, ",") != "body,name" {
		t.Errorf("putBlob schema %s, required %v", props, required)
	}
	if props, _ := schemaOf(t, tl, "postDoc"); !strings.Contains(string(props["body_content_type"]), `"enum":["application/xml","text/plain"]`) {
		t.Errorf("postDoc body_content_type %s", props["body_content_type"])
	}

	binary := []byte{0, 1, 2, 0xfe, 0xff, '\n'}
	tests := []struct {
		name, action   string
		args           map[string]any
		path, ct, body string
	}{
		{"octet-stream from base64", "putBlob", map[string]any{"name": "b1", "body": base64.StdEncoding.EncodeToString(binary), "body_encoding": "base64"},
			"/v3/blobs/b1", "application/octet-stream", string(binary)},
		{"octet-stream from unpadded base64url", "putBlob", map[string]any{"name": "b1", "body": base64.RawURLEncoding.EncodeToString(binary), "body_encoding": "base64"},
			"/v3/blobs/b1", "application/octet-stream", string(binary)},
		{"octet-stream from text", "putBlob", map[string]any{"name": "b2", "body": "héllo\n"},
			"/v3/blobs/b2", "application/octet-stream", "héllo\n"},
		{"*/* as octet-stream", "postAny", map[string]any{"body": "x"}, "/v3/any", "application/octet-stream", "x"},
		{"*/* as a named type", "postAny", map[string]any{"body": "<a/>", "body_content_type": "application/xml"}, "/v3/any", "application/xml", "<a/>"},
		{"first declared type", "postDoc", map[string]any{"body": "<a/>"}, "/v3/doc", "application/xml", "<a/>"},
		{"another declared type", "postDoc", map[string]any{"body": "a", "body_content_type": "text/plain"}, "/v3/doc", "text/plain", "a"},
		{"a wildcard's type", "postImage", map[string]any{"body": "iVBORw0K", "body_encoding": "base64", "body_content_type": "image/png"},
			"/v3/image", "image/png", "\x89PNG\r\n"},
	}
	for _, tt := range tests {
		res := call(t, task, tt.action, tt.args)
		if res.IsError {
			t.Errorf("%s: %+v", tt.name, res.Error)
			continue
		}
		r := srv.last(t)
		if r.EscapedPath != tt.path || r.Header.Get("Content-Type") != tt.ct || string(r.Body) != tt.body {
			t.Errorf("%s: %s %s body %q, want %s %s %q", tt.name, r.EscapedPath, r.Header.Get("Content-Type"), r.Body, tt.path, tt.ct, tt.body)
		}
	}

	refused := []struct {
		name, action string
		args         map[string]any
		kind, detail string
	}{
		{"path without files_from_mount", "putBlob", map[string]any{"name": "b", "body_path": "a.bin"}, "invalid_arguments", "body_path"},
		{"file path without files_from_mount", "upload", map[string]any{"body": map[string]any{"photo": map[string]any{"path": "a.bin"}}}, "invalid_arguments", "path"},
		{"undeclared type", "postDoc", map[string]any{"body": "{}", "body_content_type": "application/json"}, "invalid_arguments", "body_content_type"},
		{"wildcard type not matched", "postImage", map[string]any{"body": "x", "body_content_type": "text/plain"}, "invalid_arguments", "image/*"},
		{"wildcard type not named", "postImage", map[string]any{"body": "x"}, "missing_fields", "body_content_type"},
		{"bad base64", "putBlob", map[string]any{"name": "b", "body": "@@@", "body_encoding": "base64"}, "invalid_arguments", "not valid base64"},
		{"missing body", "putBlob", map[string]any{"name": "b"}, "missing_fields", "body"},
	}
	before := srv.count()
	for _, tt := range refused {
		res := call(t, task, tt.action, tt.args)
		if !res.IsError || res.Error.Kind != tt.kind || !strings.Contains(res.Error.Message, tt.detail) {
			t.Errorf("%s: %+v, want a %s error naming %s", tt.name, res.Error, tt.kind, tt.detail)
		}
		if res.Error != nil && strings.Contains(res.Error.Message, "secret bytes") {
			t.Errorf("%s: the error shows the file: %s", tt.name, res.Error.Message)
		}
	}
	if n := srv.count() - before; n != 0 {
		t.Errorf("%d refused calls reached the server", n)
	}
}

// TestMultipartFileParts: a multipart body's file property is an object whose bytes come from content (text or
// base64); the part carries a filename and the part's declared content type, else application/octet-stream.
func TestMultipartFileParts(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl, task := binaryTool(t, srv, "", nil, nil)
	props, _ := schemaOf(t, tl, "upload")
	var body struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(props["body"], &body); err != nil {
		t.Fatal(err)
	}
	if photo := string(body.Properties["photo"]); !strings.Contains(photo, `"content"`) || strings.Contains(photo, `"path"`) ||
		!strings.Contains(photo, "The photo.") {
		t.Errorf("photo schema %s", photo)
	}
	res := call(t, task, "upload", map[string]any{"body": map[string]any{
		"title":       "Holiday",
		"photo":       map[string]any{"content": base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G'}), "encoding": "base64", "filename": "me.png"},
		"attachments": []any{map[string]any{"content": "note one"}, map[string]any{"content": "note two", "filename": "b.txt"}},
	}})
	if res.IsError {
		t.Fatal(res.Error)
	}
	got := parts(t, srv.last(t))
	want := []part{
		{"attachments", "attachments", "application/octet-stream", "note one"},
		{"attachments", "b.txt", "application/octet-stream", "note two"},
		{"photo", "me.png", "image/png", "\x89PNG"},
		{"title", "", "", "Holiday"},
	}
	if len(got) != len(want) {
		t.Fatalf("parts %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d: %q, want %q", i, got[i], want[i])
		}
	}
	if res := call(t, task, "upload", map[string]any{"body": map[string]any{"photo": map[string]any{"filename": "x"}}}); !res.IsError ||
		!strings.Contains(res.Error.Message, "body.photo") {
		t.Errorf("a file part without content or path: %+v", res.Error)
	}
}

// TestFilesFromMount: with files_from_mount, a raw body and a file part may name a file of the task's mount by a
// relative path: its bytes are sent and a fact names the path and size, never the content. ".." and absolute
// paths are refused, and a file over max_file_bytes stops the read at the bound: nothing is sent.
func TestFilesFromMount(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	obs := &factLog{}
	big := strings.Repeat("TOPSECRET ", 100)
	mount := &memMount{files: map[string]string{"in/report.pdf": "%PDF-1.7 tiny", "photo.png": "\x89PNG", "big.bin": big}}
	tl, task := binaryTool(t, srv, "  files_from_mount: true\n  max_file_bytes: 64\n", mount, obs)

	props, required := schemaOf(t, tl, "putBlob")
	if _, has := props["body_path"]; !has || strings.Join(required, ",") != "name" {
		t.Errorf("putBlob schema %s, required %v: want body_path offered and body optional", props, required)
	}
	res := call(t, task, "putBlob", map[string]any{"name": "r", "body_path": "in/report.pdf"})
	if res.IsError {
		t.Fatal(res.Error)
	}
	if r := srv.last(t); string(r.Body) != "%PDF-1.7 tiny" || r.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("sent %s %q", r.Header.Get("Content-Type"), r.Body)
	}
	sent := obs.named("openapi.file_sent")
	if len(sent) != 1 || sent[0].Data["path"] != "in/report.pdf" || sent[0].Data["bytes"] != 13 ||
		sent[0].Data["argument"] != "body_path" || sent[0].Data["action"] != "putBlob" {
		t.Errorf("file_sent facts %+v", sent)
	}

	res = call(t, task, "upload", map[string]any{"body": map[string]any{"photo": map[string]any{"path": "photo.png"}}})
	if res.IsError {
		t.Fatal(res.Error)
	}
	if got := parts(t, srv.last(t)); len(got) != 1 || got[0] != (part{"photo", "photo.png", "image/png", "\x89PNG"}) {
		t.Errorf("parts %q", got)
	}
	if sent := obs.named("openapi.file_sent"); len(sent) != 2 || sent[1].Data["argument"] != "body.photo.path" {
		t.Errorf("file_sent facts %+v", sent)
	}

	before := srv.count()
	for _, tt := range []struct {
		name, action string
		args         map[string]any
		detail       string
	}{
		{"dot-dot", "putBlob", map[string]any{"name": "r", "body_path": "../etc/passwd"}, "body_path"},
		{"inner dot-dot", "putBlob", map[string]any{"name": "r", "body_path": `in\..\..\x`}, "'..'"},
		{"absolute", "putBlob", map[string]any{"name": "r", "body_path": "/etc/passwd"}, "absolute"},
		{"drive", "putBlob", map[string]any{"name": "r", "body_path": `C:\x`}, "absolute"},
		{"file part dot-dot", "upload", map[string]any{"body": map[string]any{"photo": map[string]any{"path": "a/../../b"}}}, "body.photo.path"},
		{"both", "putBlob", map[string]any{"name": "r", "body": "x", "body_path": "photo.png"}, "not both"},
		{"neither", "putBlob", map[string]any{"name": "r"}, "body or body_path"},
		{"missing file", "putBlob", map[string]any{"name": "r", "body_path": "nope"}, `no file "nope"`},
		{"over the bound", "putBlob", map[string]any{"name": "r", "body_path": "big.bin"}, "max_file_bytes"},
		{"text over the bound", "putBlob", map[string]any{"name": "r", "body": strings.Repeat("x", 65)}, "max_file_bytes"},
	} {
		res := call(t, task, tt.action, tt.args)
		if !res.IsError || !strings.Contains(res.Error.Message, tt.detail) || strings.Contains(res.Error.Message, "TOPSECRET") {
			t.Errorf("%s: %+v, want an error naming %s", tt.name, res.Error, tt.detail)
		}
	}
	if n := srv.count() - before; n != 0 {
		t.Errorf("%d refused calls reached the server", n)
	}
	if n := mount.bytesRead(); n > len("%PDF-1.7 tiny")+len("\x89PNG")+65+16 {
		t.Errorf("the mount handed out %d bytes: the read of big.bin (%d bytes) did not stop at the bound", n, len(big))
	}
	if sent := obs.named("openapi.file_sent"); len(sent) != 2 {
		t.Errorf("file_sent facts %+v: a refused file was reported sent", sent)
	}
	for _, f := range obs.list {
		if b, _ := json.Marshal(f.Data); bytes.Contains(b, []byte("TOPSECRET")) || bytes.Contains(b, []byte("%PDF")) {
			t.Errorf("fact %s shows file content: %s", f.Name, b)
		}
	}
}

// TestFilesFromMountProblems: files_from_mount and max_file_bytes are checked at Load, at their paths; a mount
// that cannot stream is refused at the call.
func TestFilesFromMountProblems(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	for block, path := range map[string]string{
		"  files_from_mount: yes please\n": "openapi.files_from_mount",
		"  max_file_bytes: -1\n":           "openapi.max_file_bytes",
		"  max_file_bytes: 2147483648\n":   "openapi.max_file_bytes",
	} {
		_, err := tool.Load(context.Background(), []byte(docManifest(t, srv, binaryDoc, block, "")))
		found := false
		for _, p := range problems(t, err) {
			found = found || p.Path == path
		}
		if !found {
			t.Errorf("%q: %v, want a problem at %s", block, err, path)
		}
	}
	_, task := binaryTool(t, srv, "  files_from_mount: true\n", readOnlyMount{}, nil)
	res := call(t, task, "putBlob", map[string]any{"name": "r", "body_path": "a"})
	if !res.IsError || !strings.Contains(res.Error.Message, "MountOpener") {
		t.Errorf("a mount without Open: %+v", res.Error)
	}
}

// readOnlyMount has Read but not Open.
type readOnlyMount struct{}

func (readOnlyMount) Read(context.Context, string) (string, error)          { return "x", nil }
func (readOnlyMount) Write(context.Context, string, string) (string, error) { return "", nil }

// TestStripeFileUpload: Stripe's PostFiles, a multipart body with a file part, sends the file with its filename
// next to the other parts.
func TestStripeFileUpload(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := realManifest(t, srv, "stripe-2024-04-10.json.gz", `{operations: [PostFiles]}`)
	res := invokeOnce(t, tl, "PostFiles", map[string]any{"body": map[string]any{"purpose": "dispute_evidence",
		"file": map[string]any{"content": base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\x00")), "encoding": "base64", "filename": "e.pdf"}}})
	if res.IsError {
		t.Fatal(res.Error)
	}
	r := srv.last(t)
	got := parts(t, r)
	want := []part{{"file", "e.pdf", "application/octet-stream", "%PDF-1.7\x00"}, {"purpose", "", "", "dispute_evidence"}}
	if r.Method != "POST" || r.EscapedPath != "/v3/v1/files" || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("%s %s parts %q, want POST /v3/v1/files %q", r.Method, r.EscapedPath, got, want)
	}
}

// TestBoundActionSendsMountedFile: an action bound with operation_id takes the raw body's arguments too, and the
// top-level block's files_from_mount applies to it.
func TestBoundActionSendsMountedFile(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	m := docManifest(t, srv, binaryDoc, "  files_from_mount: true\n", `actions:
  - name: put
    description: Stores a blob.
    execute:
      openapi: {operation_id: putBlob}
`)
	tl, err := tool.Load(context.Background(), []byte(m), tool.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Mount: &tool.Mount{Files: &memMount{files: map[string]string{"f": "bytes"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	res := call(t, task, "put", map[string]any{"name": "n", "body_path": "f"})
	if r := srv.last(t); res.IsError || r.EscapedPath != "/v3/blobs/n" || string(r.Body) != "bytes" {
		t.Errorf("%+v: sent %s %q", res.Error, r.EscapedPath, r.Body)
	}
}
