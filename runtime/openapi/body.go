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
	bodyMultipart = "multipart" // multipart/form-data without file parts
	bodyText      = "text"      // text/*, the body parameter a string sent as is
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
}

// bodyMedia picks the media type a request body is sent in: JSON (application/json, else the first other JSON
// type: jsonMediaType),
// else application/x-www-form-urlencoded, else multipart/form-data when no property is a file, else the first
// text/* type (the body a string). The error says why
// none fits.
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
	for _, k := range keys {
		mt, _, err := mime.ParseMediaType(k)
		if err != nil {
			continue
		}
		kind := ""
		switch {
		case mt == "application/json" || jsonMediaType(mt) && found[bodyJSON] == "":
			kind = bodyJSON
		case mt == "application/x-www-form-urlencoded":
			kind = bodyForm
		case mt == "multipart/form-data":
			kind = bodyMultipart
		case strings.HasPrefix(mt, "text/"):
			kind = bodyText
		}
		if kind != "" && (found[kind] == "" || mt == "application/json") {
			found[kind] = k
		}
	}
	var fileProp string
	for _, kind := range []string{bodyJSON, bodyForm, bodyMultipart, bodyText} {
		k := found[kind]
		if k == "" {
			continue
		}
		mt := content[k]
		if kind == bodyMultipart {
			if fileProp = fileProperty(mt); fileProp != "" {
				continue
			}
		}
		return &requestBody{kind: kind, mediaType: k, encoding: encodings(mt)}, mt, nil
	}
	if fileProp != "" {
		return nil, nil, fmt.Errorf("the multipart request body has a file part (property %q): file uploads are not supported", fileProp)
	}
	return nil, nil, fmt.Errorf("request body is in no media type Invoke can send (%s; it sends JSON, form-urlencoded, multipart without files and text)",
		strings.Join(keys, ", "))
}

// fileProperty names a property of a multipart body that is a file (format binary or base64, or a
// contentMediaType/contentEncoding), "" when there is none.
func fileProperty(mt *openapi3.MediaType) string {
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return ""
	}
	names := make([]string, 0, len(mt.Schema.Value.Properties))
	for name := range mt.Schema.Value.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := mt.Schema.Value.Properties[name].Value
		if s == nil {
			continue
		}
		if s.Items != nil && s.Items.Value != nil {
			s = s.Items.Value
		}
		if s.Format == "binary" || s.Format == "base64" || s.Extensions["contentMediaType"] != nil ||
			s.Extensions["contentEncoding"] != nil {
			return name
		}
	}
	return ""
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
// block's headers set one.
func (rb *requestBody) setBody(req *http.Request, body any) *runtime.Error {
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
			if data, contentType, err = rb.multipart(obj); err != nil {
				return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s cannot be encoded: %v", BodyParameter, err)
			}
		}
	case bodyText:
		text, ok := body.(string)
		if !ok {
			return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s must be a string: the body is sent as %s", BodyParameter, rb.mediaType)
		}
		data = []byte(text)
	default:
		var err error
		if data, err = jsonText(body); err != nil {
			return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s cannot be encoded as JSON", BodyParameter)
		}
		if contentType == "" {
			contentType = "application/json"
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	req.ContentLength = int64(len(data))
	if req.Header.Get("Content-Type") == "" {
		req.Header["Content-Type"] = []string{contentType}
	}
	return nil
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
// encoding contentType kept when it names one.
func (rb *requestBody) multipart(obj map[string]any) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	part := func(name, contentType string, data []byte) error {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": name}))
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
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		ct := rb.encoding[k].contentType
		var err error
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
