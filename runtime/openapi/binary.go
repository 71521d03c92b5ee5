package openapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// Raw bodies and file parts. A body in a single-part media type that is not JSON or a form (text/*,
// application/octet-stream, */*, XML...) and a file part of a multipart body take their bytes from one of two
// places: a string argument, text sent as UTF-8 or base64 for binary bytes, or a file of the task's mount named by
// a relative path, when the block opts in (files_from_mount), so that large bytes never pass through the LLM.
//
// A raw body is the arguments body (the text or base64), body_encoding, body_path (with files_from_mount) and
// body_content_type (when the operation accepts several types or a wildcard). A file part is an object in place
// of the property: {content, encoding, path, filename}.

// The arguments of a raw body besides BodyParameter.
const (
	BodyEncodingParameter    = BodyParameter + "_encoding"
	BodyPathParameter        = BodyParameter + "_path"
	BodyContentTypeParameter = BodyParameter + "_content_type"
)

// Encodings of a raw body's or a file's content argument.
const (
	encodingText   = "text"
	encodingBase64 = "base64"
)

// DefaultFileBytes bounds the bytes of one call's raw body and file parts together, wherever they come from,
// unless the block's max_file_bytes sets another bound.
const DefaultFileBytes = 10 << 20

// maxFileBytes is the largest max_file_bytes a block may set.
const maxFileBytes = 1 << 30

// FactFileSent is the fact reported for each file of the mount a request carries, before it is sent: its data
// are the action, the argument, the path and the size in bytes, never the content.
const FactFileSent = "openapi.file_sent"

// fileOptions are the block's files_from_mount and max_file_bytes.
type fileOptions struct {
	fromMount bool
	maxBytes  int64
}

// filePart is a file property of a multipart body.
type filePart struct {
	contentType string // encoding.contentType (its first concrete type), else application/octet-stream
	base64      bool   // format base64: the part carries the bytes base64-encoded
	list        bool   // an array of files: one part each
}

// fileData is one file part's bytes, ready to send.
type fileData struct {
	filename, contentType string
	data                  []byte
}

// rawBody is the body of an operation whose media types are all single-part and not JSON or a form. The type sent
// by default is the first concrete one; else application/octet-stream for */* and application/*, text/plain for
// text/*; else (image/* alone) the call names it.
func rawBody(types []string) *requestBody {
	rb := &requestBody{kind: bodyRaw, types: types}
	for _, t := range types {
		if mt, _, _ := mime.ParseMediaType(t); !strings.Contains(mt, "*") {
			rb.mediaType = t
			return rb
		}
	}
	for _, t := range types {
		switch mt, _, _ := mime.ParseMediaType(t); mt {
		case "*/*", "application/*":
			rb.mediaType = "application/octet-stream"
			return rb
		case "text/*":
			rb.mediaType = "text/plain"
			return rb
		}
	}
	return rb
}

// fileParts returns the file properties of a multipart body: format binary or base64, or a contentMediaType or
// contentEncoding, or arrays of such.
func fileParts(mt *openapi3.MediaType, enc map[string]fieldEncoding) map[string]filePart {
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	out := map[string]filePart{}
	for name, ref := range mt.Schema.Value.Properties {
		if ref == nil || ref.Value == nil {
			continue
		}
		s, list := ref.Value, false
		if s.Items != nil && s.Items.Value != nil {
			s, list = s.Items.Value, true
		}
		if s.Format != "binary" && s.Format != "base64" && s.Extensions["contentMediaType"] == nil &&
			s.Extensions["contentEncoding"] == nil {
			continue
		}
		ct := "application/octet-stream"
		for t := range strings.SplitSeq(enc[name].contentType, ",") {
			if t = strings.TrimSpace(t); t != "" && !strings.Contains(t, "*") {
				ct = t
				break
			}
		}
		out[name] = filePart{contentType: ct, base64: s.Format == "base64", list: list}
	}
	return out
}

// offerFiles shows the arguments of an operation's raw body or file parts to the LLM (the package comment above):
// it rewrites the parameters' schema, and the full one when the shown one is bounded. The error says why the
// operation cannot take them (an argument of the same name, a body schema without its file properties).
func offerFiles(o *operation, opts fileOptions) error {
	rb := o.body
	if rb == nil || rb.kind != bodyRaw && len(rb.files) == 0 {
		return nil
	}
	rb.fromMount, rb.maxBytes, rb.required = opts.fromMount, opts.maxBytes, o.bodyRequired
	// The body's arguments are the ones offered here, not the document's schema: they validate as shown.
	delete(o.located, BodyParameter)
	for _, schema := range []map[string]any{o.schema, o.whole} {
		if schema == nil {
			continue
		}
		var err error
		if rb.kind == bodyRaw {
			err = rb.offerRaw(schema)
		} else {
			err = rb.offerParts(schema)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// offerRaw replaces the body argument of schema with a raw body's arguments.
func (rb *requestBody) offerRaw(schema map[string]any) error {
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		return errors.New("the request body cannot be shown")
	}
	desc := ""
	if old, ok := props[BodyParameter].(map[string]any); ok {
		desc, _ = old["description"].(string)
	}
	if desc != "" {
		desc += "\n\n"
	}
	desc += fmt.Sprintf("The request body (%s): text sent as is, or base64 of binary bytes when %s is base64.",
		strings.Join(rb.types, ", "), BodyEncodingParameter)
	args := map[string]any{
		BodyParameter: map[string]any{"type": "string", "description": desc},
		BodyEncodingParameter: map[string]any{"type": "string", "enum": []any{encodingText, encodingBase64},
			"default": encodingText, "description": "How " + BodyParameter + " is written: text, or base64 for binary bytes."},
	}
	if rb.fromMount {
		args[BodyPathParameter] = map[string]any{"type": "string", "description": fmt.Sprintf(
			"Instead of %s: a file of the task's mount, by its path relative to the mount, whose bytes are sent as "+
				"the body (up to %d bytes). Prefer it for files.", BodyParameter, rb.maxBytes)}
		args[BodyParameter].(map[string]any)["description"] = desc + " Give " + BodyParameter + " or " +
			BodyPathParameter + "."
	}
	if rb.offersContentType() {
		ct := map[string]any{"type": "string"}
		var enum []any
		for _, t := range rb.types {
			if strings.Contains(t, "*") {
				enum = nil
				break
			}
			enum = append(enum, t)
		}
		if enum != nil {
			ct["enum"] = enum
		}
		ct["description"] = "The media type the body is sent as, one the operation accepts: " + strings.Join(rb.types, ", ")
		if rb.mediaType != "" {
			ct["default"] = rb.mediaType
			ct["description"] = ct["description"].(string) + "; default " + rb.mediaType
		}
		args[BodyContentTypeParameter] = ct
	}
	for name, s := range args {
		if _, taken := props[name]; taken && name != BodyParameter {
			return fmt.Errorf("a parameter is named like the request body argument %q", name)
		}
		props[name] = s
	}
	if rb.fromMount { // body or body_path: Invoke checks that one is given
		if req, ok := schema["required"].([]any); ok {
			schema["required"] = slices.DeleteFunc(slices.Clone(req), func(v any) bool { return v == BodyParameter })
		}
	}
	return nil
}

// offersContentType reports whether a raw body's call may name its media type: the operation accepts several, or
// a wildcard.
func (rb *requestBody) offersContentType() bool {
	return len(rb.types) > 1 || rb.mediaType == "" || strings.Contains(rb.types[0], "*")
}

// offerParts replaces each file property of the multipart body in schema with a file object. The body schema is
// copied first: it may be shared with other operations.
func (rb *requestBody) offerParts(schema map[string]any) error {
	props, _ := schema["properties"].(map[string]any)
	body, _ := props[BodyParameter].(map[string]any)
	inner, _ := body["properties"].(map[string]any)
	if inner == nil {
		return errors.New("the multipart request body's file parts cannot be shown: its schema has no properties")
	}
	body, inner = maps.Clone(body), maps.Clone(inner)
	for name, fp := range rb.files {
		old, _ := inner[name].(map[string]any)
		desc, _ := old["description"].(string)
		if fp.list {
			if items, ok := old["items"].(map[string]any); ok && desc == "" {
				desc, _ = items["description"].(string)
			}
		}
		file := rb.fileSchema(desc, fp)
		if fp.list {
			file = map[string]any{"type": "array", "items": file, "description": "Files, one part each."}
		}
		inner[name] = file
	}
	body["properties"] = inner
	props[BodyParameter] = body
	return nil
}

// fileSchema is the object the LLM gives for one file part.
func (rb *requestBody) fileSchema(desc string, fp filePart) map[string]any {
	if desc != "" {
		desc += "\n\n"
	}
	desc += fmt.Sprintf("A file, sent as %s: its bytes as content (text, or base64 when encoding is base64)",
		fp.contentType)
	props := map[string]any{
		"content": map[string]any{"type": "string", "description": "The file's bytes: text, or base64 (encoding)."},
		"encoding": map[string]any{"type": "string", "enum": []any{encodingText, encodingBase64}, "default": encodingText,
			"description": "How content is written."},
		"filename": map[string]any{"type": "string", "description": "The file name sent with the part; default " +
			"the path's last element, else the property's name."},
	}
	if rb.fromMount {
		desc += fmt.Sprintf(", or path: a file of the task's mount, by its path relative to the mount (up to %d "+
			"bytes; prefer it for files)", rb.maxBytes)
		props["path"] = map[string]any{"type": "string", "description": "Instead of content: a file of the task's " +
			"mount, by its path relative to the mount."}
	}
	return map[string]any{"type": "object", "description": desc + ".", "properties": props,
		"additionalProperties": false}
}

// fileSource reads the bytes of one call's raw body and file parts, within the block's bound, and remembers the
// mount's files it read for the facts.
type fileSource struct {
	ctx   context.Context
	mount celenv.Mount
	left  int64 // bytes the call may still carry
	sent  []map[string]any
}

// report observes FactFileSent for each file of the mount the request carries.
func (s *fileSource) report(ctx context.Context, observe func(context.Context, string, map[string]any), action string) {
	if observe == nil {
		return
	}
	for _, f := range s.sent {
		f["action"] = action
		observe(ctx, FactFileSent, f)
	}
}

// setFiles sets a raw body, or a multipart body with file parts, on req.
func (rb *requestBody) setFiles(req *http.Request, args map[string]any, src *fileSource) *runtime.Error {
	src.left = rb.maxBytes
	if rb.kind == bodyRaw {
		return rb.setRawBody(req, args, src)
	}
	body, ok := args[BodyParameter]
	if !ok || body == nil {
		return nil
	}
	obj, ok := body.(map[string]any)
	if !ok {
		return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be an object: the body is sent as a form", BodyParameter)
	}
	files := map[string][]fileData{}
	for _, name := range slices.Sorted(maps.Keys(rb.files)) {
		v, ok := obj[name]
		if !ok || v == nil {
			continue
		}
		fp := rb.files[name]
		items := []any{v}
		if fp.list {
			if items, ok = v.([]any); !ok {
				return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s.%s must be an array of files", BodyParameter, name)
			}
		}
		for i, item := range items {
			arg := BodyParameter + "." + name
			if fp.list {
				arg += fmt.Sprintf("[%d]", i)
			}
			f, ok := item.(map[string]any)
			if !ok {
				return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be an object with content or path", arg)
			}
			data, from, rerr := src.bytes(rb, arg+".content", arg+".encoding", arg+".path", f["content"], f["encoding"], f["path"])
			if rerr != nil {
				return rerr
			}
			if data == nil {
				return runtime.Errorf(runtime.KindMissingFields, "parameter %s needs content or path", arg)
			}
			filename, _ := f["filename"].(string)
			switch {
			case filename != "":
			case from != "":
				filename = path.Base(filepath.ToSlash(from))
			default:
				filename = name
			}
			if fp.base64 {
				data = []byte(base64.StdEncoding.EncodeToString(data))
			}
			files[name] = append(files[name], fileData{filename: filename, contentType: fp.contentType, data: data})
		}
	}
	return rb.setBody(req, obj, files)
}

// setRawBody sets a raw body from body, body_encoding, body_path and body_content_type.
func (rb *requestBody) setRawBody(req *http.Request, args map[string]any, src *fileSource) *runtime.Error {
	data, _, rerr := src.bytes(rb, BodyParameter, BodyEncodingParameter, BodyPathParameter,
		args[BodyParameter], args[BodyEncodingParameter], args[BodyPathParameter])
	if rerr != nil {
		return rerr
	}
	if data == nil {
		if !rb.required {
			return nil
		}
		if rb.fromMount {
			return runtime.Errorf(runtime.KindMissingFields, "parameter %s or %s is required", BodyParameter, BodyPathParameter)
		}
		return runtime.Errorf(runtime.KindMissingFields, "parameter %s is required", BodyParameter)
	}
	ct, rerr := rb.contentType(args[BodyContentTypeParameter])
	if rerr != nil {
		return rerr
	}
	setRaw(req, data, ct)
	return nil
}

// contentType is the media type a raw body is sent in: v (body_content_type) when the operation accepts it, else
// the default.
func (rb *requestBody) contentType(v any) (string, *runtime.Error) {
	if v == nil {
		if rb.mediaType == "" {
			return "", runtime.Errorf(runtime.KindMissingFields, "parameter %s is required: the operation accepts %s",
				BodyContentTypeParameter, strings.Join(rb.types, ", "))
		}
		return rb.mediaType, nil
	}
	s, _ := v.(string)
	mt, _, err := mime.ParseMediaType(s)
	if err == nil && validHeaderValue(s) && !strings.Contains(mt, "*") {
		for _, t := range rb.types {
			declared, _, _ := mime.ParseMediaType(t)
			switch {
			case declared == mt:
				return t, nil
			case declared == "*/*", strings.HasSuffix(declared, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(declared, "*")):
				return s, nil
			}
		}
	}
	return "", runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be a media type the operation accepts: %s",
		BodyContentTypeParameter, strings.Join(rb.types, ", "))
}

// bytes returns the bytes given by content (with its encoding) or by path, a file of the mount, and the path; nil
// when neither is given. The arguments' names are for errors, which never hold the bytes.
func (s *fileSource) bytes(rb *requestBody, contentArg, encodingArg, pathArg string, content, encoding, p any) ([]byte, string, *runtime.Error) {
	switch {
	case p != nil && !rb.fromMount:
		return nil, "", runtime.Errorf(runtime.KindInvalidArguments,
			"parameter %s: this tool does not send files of the mount (files_from_mount is off)", pathArg)
	case p != nil && content != nil:
		return nil, "", runtime.Errorf(runtime.KindInvalidArguments, "give %s or %s, not both", contentArg, pathArg)
	case p != nil:
		data, rerr := s.readMount(pathArg, p)
		from, _ := p.(string)
		return data, from, rerr
	case content == nil:
		return nil, "", nil
	}
	text, ok := content.(string)
	if !ok {
		return nil, "", runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be a string", contentArg)
	}
	var data []byte
	switch encoding {
	case nil, encodingText:
		data = []byte(text)
	case encodingBase64:
		var err error
		if data, err = decodeBase64(text); err != nil {
			return nil, "", runtime.Errorf(runtime.KindInvalidArguments, "parameter %s is not valid base64", contentArg)
		}
	default:
		return nil, "", runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be %s or %s", encodingArg,
			encodingText, encodingBase64)
	}
	if int64(len(data)) > s.left {
		return nil, "", runtime.Errorf(runtime.KindInvalidArguments,
			"parameter %s is %d bytes: over the %d bytes the request's files may carry (max_file_bytes)",
			contentArg, len(data), s.left)
	}
	s.left -= int64(len(data))
	return data, "", nil
}

// decodeBase64 reads standard base64, padded or not, and its URL-safe alphabet.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.Join(strings.Fields(s), ""), "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// readMount reads the file at p, a path relative to the mount, stopping once it is over the call's bound.
func (s *fileSource) readMount(arg string, v any) ([]byte, *runtime.Error) {
	p, ok := v.(string)
	if !ok || p == "" {
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be a path relative to the mount", arg)
	}
	if absolutePath(p) {
		return nil, runtime.Errorf(runtime.KindInvalidArguments,
			"parameter %s: %q is absolute; name the file by its path relative to the mount", arg, p)
	}
	if celenv.CheckMountPath(p) != nil {
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "parameter %s: %q must not contain '..' segments", arg, p)
	}
	if s.mount == nil {
		return nil, runtime.Errorf(runtime.KindInvalidRequest, "parameter %s: the task has no mount to read files from", arg)
	}
	opener, ok := s.mount.(celenv.MountOpener)
	if !ok {
		return nil, runtime.Errorf(runtime.KindInvalidRequest,
			"parameter %s: the host's mount cannot stream files (it does not implement celenv.MountOpener)", arg)
	}
	rc, err := opener.Open(s.ctx, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, runtime.Errorf(runtime.KindInvalidArguments, "parameter %s: the mount has no file %q", arg, p)
		}
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "parameter %s: %q cannot be read from the mount", arg, p)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, s.left+1))
	switch {
	case err != nil:
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "parameter %s: %q cannot be read from the mount", arg, p)
	case int64(len(data)) > s.left:
		return nil, runtime.Errorf(runtime.KindInvalidArguments,
			"parameter %s: %q is over the %d bytes the request's files may carry (max_file_bytes); nothing was sent",
			arg, p, s.left)
	}
	s.left -= int64(len(data))
	s.sent = append(s.sent, map[string]any{"argument": arg, "path": p, "bytes": len(data)})
	return data, nil
}

// absolutePath reports whether p is absolute on any system: a leading / or \, or a Windows volume.
func absolutePath(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) ||
		len(p) >= 2 && p[1] == ':'
}
