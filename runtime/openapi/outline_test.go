package openapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestKinInputKeepsWhatLoadReads pins that kin-openapi, handed the trimmed document (kinInput), gives every
// operation the same parameters schema and description as from the whole document, for each JSON document of the
// directory sample and the smaller real ones; and that the trimmed document is smaller where responses are.
func TestKinInputKeepsWhatLoadReads(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "directory", "*.json.gz"))
	files = append(files, filepath.Join("testdata", "petstore3.json"), filepath.Join("testdata", "sendgrid-v3.json"),
		filepath.Join("testdata", "swaggest-sample-3.1.json"))
	if len(files) < 40 {
		t.Fatalf("%d documents", len(files))
	}
	if testing.Short() { // a fixed quarter of them; the full run takes every one
		files = slices.Collect(func(yield func(string) bool) {
			for i, f := range files {
				if i%4 == 0 && !yield(f) {
					return
				}
			}
		})
	}
	trimmed := 0
	for _, f := range files {
		data := readMaybeGzip(t, f)
		input, ops := sameAsWhole(t, f, data)
		if input == nil {
			continue
		}
		trimmed++
		if n := len(text(input)); n >= len(data) && bytes.Contains(data, []byte(`"responses"`)) {
			t.Errorf("%s: trimmed to %d bytes of %d", f, n, len(data))
		}
		if ops == 0 {
			t.Errorf("%s: no operations", f)
		}
	}
	if trimmed < len(files)*3/4 {
		t.Errorf("only %d of %d documents trimmed", trimmed, len(files))
	}
}

// sameAsWhole checks, where kinInput trims data and kin-openapi loads data whole, that kin-openapi loads the
// trimmed document too and gives every operation the same parameters schema and description; it returns what
// kinInput gave (nil: it declined) and how many operations the whole document has.
func sameAsWhole(t *testing.T, name string, data []byte) (input *kinParts, ops int) {
	t.Helper()
	if input = kinInput(data); input == nil {
		return nil, 0
	}
	whole, err := openapi3.NewLoader().LoadFromDataWithPath(data, &url.URL{Path: name})
	if err != nil {
		return input, 0 // kin-openapi refuses it whole: read() falls back to the whole document anyway
	}
	part, err := loadKin(context.Background(), input)
	if err != nil {
		t.Errorf("%s: the trimmed document does not load: %v", name, err)
		return input, 0
	}
	dialect := schemaDialect(whole)
	walk(whole, func(path, method string, item *openapi3.PathItem, op *openapi3.Operation) {
		ops++
		want, werr := convert(path, method, item, op, dialect)
		pitem := part.Paths.Find(path)
		if pitem == nil || pitem.GetOperation(method) == nil {
			t.Errorf("%s: %s %s is missing from the trimmed document", name, method, path)
			return
		}
		got, gerr := convert(path, method, pitem, pitem.GetOperation(method), dialect)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: %s %s: error %v, want %v", name, method, path, gerr, werr)
			return
		}
		if werr == nil && (encode(t, got.schema) != encode(t, want.schema) || got.description != want.description) {
			t.Errorf("%s: %s %s: converted differently from the trimmed document", name, method, path)
		}
	})
	return input, ops
}

// FuzzKinInput: kinInput never panics, and wherever it trims a document kin-openapi loads whole, every operation
// converts as from the whole document (kinInput reads untrusted text with its own scanner).
func FuzzKinInput(f *testing.F) {
	for _, seed := range []string{trimsDoc, `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/p/{id}":{
"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"put":{"operationId":"put",
"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S"}}}},
"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/R"}}}}}}}},
"components":{"schemas":{"S":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/R"}}},"R":{"type":"integer"}}}}`} {
		f.Add([]byte(seed))
	}
	// kin-openapi decodes keys case-insensitively (encoding/json): kinInput must read such a document whole.
	for _, variant := range [][2]string{{`"paths":`, `"Paths":`}, {`"post":{"operationId"`, `"Post":{"operationId"`},
		{`"/a":{"parameters":`, `"/a":{"Parameters":`}} {
		f.Add([]byte(strings.Replace(trimsDoc, variant[0], variant[1], 1)))
	}
	f.Add(readMaybeGzip(f, filepath.Join("testdata", "petstore3.json")))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		sameAsWhole(t, "fuzz.json", data)
	})
}

// text is every piece of p, one after the other.
func text(p *kinParts) string {
	var b strings.Builder
	b.Write(p.root)
	for _, c := range p.schemas {
		b.WriteString(`"` + c.name + `"`)
		b.Write(c.text)
	}
	params := func(list *[][]byte) {
		if list != nil {
			for _, e := range *list {
				b.Write(e)
			}
		}
	}
	for _, it := range p.items {
		b.WriteString(it.path)
		b.Write(it.rest)
		params(it.params)
		for _, o := range it.ops {
			b.WriteString(o.method)
			b.Write(o.rest)
			params(o.params)
			b.Write(o.body)
		}
	}
	return b.String()
}

func readMaybeGzip(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// trimsDoc has a part of each kind kinInput keeps or leaves out.
const trimsDoc = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},
"paths":{"/a":{"parameters":[{"$ref":"#/components/parameters/P"}],
  "post":{"operationId":"a","requestBody":{"$ref":"#/components/requestBodies/B"},
    "responses":{"200":{"$ref":"#/components/responses/R"}},"callbacks":{"c":{"$ref":"#/components/callbacks/C"}}}},
 "/b":{"$ref":"#/components/pathItems/I"}},
"webhooks":{"w":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Hook"}}}}}}},
"components":{
 "parameters":{"P":{"name":"p","in":"query","schema":{"$ref":"#/components/schemas/Chain1"}},"Q":{"name":"q","in":"query"}},
 "requestBodies":{"B":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Body"}}}}},
 "pathItems":{"I":{"get":{"parameters":[{"name":"x","in":"query","schema":{"$ref":"#/components/schemas/With%20Space"}}]}}},
 "responses":{"R":{"description":"r","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Out"}}}}},
 "callbacks":{"C":{}},
 "securitySchemes":{"s":{"type":"http","scheme":"bearer"}},
 "schemas":{"Chain1":{"$ref":"#/components/schemas/Chain2"},"Chain2":{"type":"string"},
  "Body":{"type":"object","properties":{"self":{"$ref":"#/components/schemas/Body"},"d":{"$ref":"#/components/schemas/Deep/properties/x"}}},
  "Deep":{"properties":{"x":{"type":"integer"}}},"With Space":{"type":"string"},
  "Out":{"type":"object"},"Hook":{"type":"object"},"Unused":{"type":"object"}}}}`

// TestKinInputTrims pins what kinInput leaves out and where it declines.
func TestKinInputTrims(t *testing.T) {
	t.Parallel()
	doc := trimsDoc
	parts := kinInput([]byte(doc))
	if parts == nil {
		t.Fatal("not trimmed")
	}
	out := text(parts)
	for _, kept := range []string{`"Chain1"`, `"Chain2"`, `"Body"`, `"Deep"`, `"With Space"`, `"P"`, `"B"`, `"I"`,
		`"securitySchemes"`, `"operationId":"a"`} {
		if !strings.Contains(out, kept) {
			t.Errorf("%s left out: %s", kept, out)
		}
	}
	for _, dropped := range []string{`"Out"`, `"Hook"`, `"Unused"`, `"responses":{"200"`, `"callbacks":{"c"`,
		`"webhooks"`, `"Q"`, `"R"`} {
		if strings.Contains(out, dropped) {
			t.Errorf("%s kept: %s", dropped, out)
		}
	}
	loaded, err := loadKin(context.Background(), parts)
	if err != nil {
		t.Fatalf("the trimmed document does not load: %v\n%s", err, out)
	}
	a := loaded.Paths.Find("/a")
	if a == nil || a.Post == nil || len(a.Parameters) != 1 || a.Parameters[0].Value == nil ||
		a.Parameters[0].Value.Schema.Value == nil || a.Post.RequestBody.Value == nil {
		t.Fatalf("/a read as %+v", a)
	}
	if b := loaded.Paths.Find("/b"); b == nil || b.Get == nil {
		t.Errorf("/b read as %+v", b)
	}
	for name, d := range map[string]string{
		"another file":                      strings.Replace(doc, "#/components/schemas/Chain2", "other.json#/Chain2", 1),
		"outside components":                strings.Replace(doc, "#/components/schemas/Chain2", "#/paths/~1a/parameters/0", 1),
		"a repeated key":                    strings.Replace(doc, `"Unused":`, `"Out":`, 1),
		"a path item that is not an object": strings.Replace(doc, `"/b":{"$ref":"#/components/pathItems/I"}`, `"/b":null`, 1),
		"a root key in another case":        strings.Replace(doc, `"paths":`, `"Paths":`, 1),
		"a component kind in another case":  strings.Replace(doc, `"schemas":{"Chain1"`, `"Schemas":{"Chain1"`, 1),
		"a path item key in another case":   strings.Replace(doc, `"/a":{"parameters":`, `"/a":{"Parameters":`, 1),
		"a method in another case":          strings.Replace(doc, `"post":{"operationId"`, `"POST":{"operationId"`, 1),
		"an operation key in another case":  strings.Replace(doc, `"requestBody":{"$ref"`, `"RequestBody":{"$ref"`, 1),
		"a $ref in another case":            strings.Replace(doc, `"/b":{"$ref"`, `"/b":{"$REF"`, 1),
		"not JSON":                          "openapi: 3.1.0\n",
		"invalid JSON":                      doc[:len(doc)-1],
	} {
		if out := kinInput([]byte(d)); out != nil {
			t.Errorf("%s: trimmed, want nil: %s", name, text(out))
		}
	}
}
