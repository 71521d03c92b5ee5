package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// Body encodings an operation's request body can be sent in.
const (
	bodyJSON      = "json"
	bodyForm      = "form"      // application/x-www-form-urlencoded
	bodyMultipart = "multipart" // multipart/form-data; its file parts are filled as raw bodies are (binary.go)
	// bodyRaw is any other single-part media type (text/*, application/octet-stream, */*, XML...): bytes from a
	// text or base64 argument or a mounted file (binary.go).
	bodyRaw = "raw"
)

// fieldEncoding is the OpenAPI encoding object of one property of a form or multipart body.
type fieldEncoding struct {
	style       string
	explode     bool
	contentType string
}

// requestBody is how an operation's body is sent.
type requestBody struct {
	kind      string
	mediaType string // as the document writes it, sent as Content-Type (multipart adds its boundary)
	encoding  map[string]fieldEncoding
	// types are the media types a raw body may be sent in, as the document writes them, sorted; mediaType is
	// the one sent when the call names none ("" when a wildcard such as image/* leaves the call to name it).
	types []string
	// files are the file parts of a multipart body, by property name.
	files map[string]filePart
	// fromMount and maxBytes are the block's files_from_mount and max_file_bytes, required the operation's
	// (offerFiles).
	fromMount, required bool
	maxBytes            int64
}

// bodyMedia picks the media type a request body is sent in: JSON (application/json, else the first other JSON
// type: jsonMediaType), else application/x-www-form-urlencoded, else multipart/form-data, else the single-part
// types (bodyRaw). The error says why none fits: only other multipart types, or unparsable media types.
func bodyMedia(content openapi3.Content) (*requestBody, *openapi3.MediaType, error) {
	if len(content) == 0 {
		return &requestBody{kind: bodyJSON}, nil, nil
	}
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	found := map[string]string{}
	var raws []string
	for _, k := range keys {
		mt, _, err := mime.ParseMediaType(k)
		if err != nil {
			continue
		}
		kind := ""
		switch {
		case jsonMediaType(mt):
			if mt == "application/json" || found[bodyJSON] == "" {
				found[bodyJSON] = k
			}
			continue
		case mt == "application/x-www-form-urlencoded":
			kind = bodyForm
		case mt == "multipart/form-data":
			kind = bodyMultipart
		case strings.HasPrefix(mt, "multipart/"):
			continue // multipart/mixed, related...: parts Invoke cannot describe
		default:
			raws = append(raws, k)
			continue
		}
		if found[kind] == "" {
			found[kind] = k
		}
	}
	for _, kind := range []string{bodyJSON, bodyForm, bodyMultipart} {
		if k := found[kind]; k != "" {
			mt := content[k]
			rb := &requestBody{kind: kind, mediaType: k, encoding: encodings(mt)}
			if kind == bodyMultipart {
				rb.files = fileParts(mt, rb.encoding)
			}
			return rb, mt, nil
		}
	}
	if len(raws) > 0 {
		return rawBody(raws), content[raws[0]], nil
	}
	return nil, nil, fmt.Errorf("request body is in no media type Invoke can send (%s; it sends JSON, form-urlencoded, multipart/form-data and single-part bodies)",
		strings.Join(keys, ", "))
}

func encodings(mt *openapi3.MediaType) map[string]fieldEncoding {
	if mt == nil || len(mt.Encoding) == 0 {
		return nil
	}
	out := make(map[string]fieldEncoding, len(mt.Encoding))
	for name, e := range mt.Encoding {
		if e == nil {
			continue
		}
		fe := fieldEncoding{style: e.Style, contentType: e.ContentType, explode: e.Style == "" || e.Style == "form"}
		if e.Explode != nil {
			fe.explode = *e.Explode
		}
		out[name] = fe
	}
	return out
}

// setBody encodes body in the operation's media type and sets it on req, with that Content-Type unless the
// block's headers set one. files are the bytes of the multipart file parts (binary.go), by property.
func (rb *requestBody) setBody(req *http.Request, body any, files map[string][]fileData) *runtime.Error {
	var data []byte
	contentType := rb.mediaType
	switch rb.kind {
	case bodyForm, bodyMultipart:
		obj, ok := body.(map[string]any)
		if !ok {
			return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be an object: the body is sent as a form", BodyParameter)
		}
		if rb.kind == bodyForm {
			data = []byte(strings.Join(rb.form(obj), "&"))
		} else {
			var err error
			if data, contentType, err = rb.multipart(obj, files); err != nil {
				return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s cannot be encoded: %v", BodyParameter, err)
			}
		}
	default:
		var err error
		if data, err = jsonText(body); err != nil {
			return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s cannot be encoded as JSON", BodyParameter)
		}
		if contentType == "" {
			contentType = "application/json"
		}
	}
	setRaw(req, data, contentType)
	return nil
}

// setRaw sets data as req's body, with contentType unless the block's headers set one.
func setRaw(req *http.Request, data []byte, contentType string) {
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	req.ContentLength = int64(len(data))
	if req.Header.Get("Content-Type") == "" {
		req.Header["Content-Type"] = []string{contentType}
	}
}

// jsonText encodes v as JSON without HTML escaping, as stateless_http bodies are.
func jsonText(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func isJSONMedia(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && jsonMediaType(mt)
}

// jsonMediaType reports whether the parsed media type mt is JSON: application/json, a +json type, or the
// application/x-amz-json-1.0 and -1.1 types of AWS JSON-protocol services.
func jsonMediaType(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || strings.HasPrefix(mt, "application/x-amz-json-")
}

// form encodes a form-urlencoded body: each property by its encoding (style form by default, exploded; a JSON
// contentType sends the value as JSON text); objects, and arrays of objects, nest in the bracket form Stripe,
// Rails and PHP read (metadata[key]=v, items[0][price]=p); a deepObject array is key[]=a.
func (rb *requestBody) form(obj map[string]any) []string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		enc, has := rb.encoding[k]
		if !has {
			enc = fieldEncoding{style: "form", explode: true}
		}
		if enc.contentType != "" && isJSONMedia(enc.contentType) {
			text, _ := jsonText(v)
			pairs = append(pairs, url.QueryEscape(k)+"="+url.QueryEscape(string(text)))
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			if enc.style == "form" && !enc.explode {
				pairs = appendQuery(pairs, &param{name: k, style: "form"}, v)
				continue
			}
			pairs = nest(pairs, k, v)
		case []any:
			if enc.style == "deepObject" || !flatList(v) {
				pairs = nest(pairs, k, v)
				continue
			}
			pairs = appendQuery(pairs, &param{name: k, style: enc.style, explode: enc.explode}, v)
		default:
			pairs = append(pairs, url.QueryEscape(k)+"="+url.QueryEscape(interp.Text(v)))
		}
	}
	return pairs
}

// flatList reports whether every item of v is a primitive.
func flatList(v []any) bool {
	for _, e := range v {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

// multipart encodes a multipart/form-data body: a part per primitive property (arrays of primitives as one part
// per item), objects and other arrays as JSON parts (OpenAPI's default content type for them), a property's
// encoding contentType kept when it names one; a file property (files) as one part per file, with its filename.
func (rb *requestBody) multipart(obj map[string]any, files map[string][]fileData) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	filePart := func(name, filename, contentType string, data []byte) error {
		h := textproto.MIMEHeader{}
		disposition := map[string]string{"name": name}
		if filename != "" {
			disposition["filename"] = filename
		}
		h.Set("Content-Disposition", mime.FormatMediaType("form-data", disposition))
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		_, err = pw.Write(data)
		return err
	}
	part := func(name, contentType string, data []byte) error { return filePart(name, "", contentType, data) }
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		ct := rb.encoding[k].contentType
		var err error
		if list, isFile := files[k]; isFile {
			for _, f := range list {
				if err = filePart(k, f.filename, f.contentType, f.data); err != nil {
					return nil, "", err
				}
			}
			continue
		}
		switch v := obj[k].(type) {
		case map[string]any:
			err = jsonPart(part, k, ct, v)
		case []any:
			if !flatList(v) {
				err = jsonPart(part, k, ct, v)
				break
			}
			for _, e := range v {
				if err = part(k, ct, []byte(interp.Text(e))); err != nil {
					break
				}
			}
		default:
			err = part(k, ct, []byte(interp.Text(v)))
		}
		if err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func jsonPart(part func(name, ct string, data []byte) error, name, ct string, v any) error {
	data, err := jsonText(v)
	if err != nil {
		return err
	}
	if ct == "" {
		ct = "application/json"
	}
	return part(name, ct, data)
}
