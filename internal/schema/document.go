package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Document is a source document whose schemas many compiled schemas refer to (an OpenAPI description): it is given
// to one validator compiler once, so a schema several operations share is collected, checked and compiled once for
// all of them (issue 31: Microsoft Graph compiled its shared components again per operation). Schemas refer into it
// by JSON pointer under documentURL. A Document is safe for concurrent use.
type Document struct {
	mu       sync.Mutex
	jc       *jsonschema.Compiler
	dialect  Dialect
	n        int
	compiled map[string]*jsonschema.Schema // by the canonical JSON of the schema compiled against the document
}

// documentURL is the base URI of a Document (runtime.SchemaDocumentURL). It names no reachable place: the loader
// refuses it anyway. It is under json-schema.org, whose documents the validator does not check against their
// meta-schema: a whole OpenAPI document's schemas would cost as much again as compiling them (GitHub: +25 % of its
// Load). kin-openapi has parsed them into typed fields already, and a schema the compiler cannot take (or panics
// on) only costs the operations that reach it their validation against the document (they fall back to their
// converted copy).
const documentURL = "https://json-schema.org/commonagents-go-tool/document"

// NewDocument prepares doc, a decoded JSON document, for compiling schemas that refer into it. dialect is the
// dialect of its schemas (a schema's own `$schema` wins). Its schemas should sit where the dialect keeps
// subschemas ($defs or definitions): the validator collects those when it first reads the document, and copies
// its record of the whole document for every other location it is asked for. A pattern Go's regexp package cannot
// compile (an ECMA-262 lookahead) constrains nothing, as in the schemas a backend converts. NewDocument performs
// no I/O.
func NewDocument(doc any, dialect Dialect) (*Document, error) {
	v, err := canonical(doc)
	if err != nil {
		return nil, err
	}
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(dialect.draft())
	jc.UseLoader(refuseLoads{})
	jc.UseRegexpEngine(lenientRegexp)
	if err := jc.AddResource(documentURL, v); err != nil {
		return nil, err
	}
	return &Document{jc: jc, dialect: dialect, compiled: map[string]*jsonschema.Schema{}}, nil
}

// compile compiles doc, a schema whose `$ref`s may name the document's locations (documentURL#pointer), against the document. A
// schema compiled before is returned again.
func (d *Document) compile(doc any) (s *jsonschema.Schema, err error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	key := string(b)
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.compiled[key]; s != nil {
		return s, nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	d.n++
	u := fmt.Sprintf("%s:schema:%d", documentURL, d.n)
	if err := d.jc.AddResource(u, v); err != nil {
		return nil, err
	}
	defer func() {
		// The document's schemas reach the validator's compiler without a check against their meta-schema: a
		// malformed one must not take the host down.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cannot be compiled")
		}
	}()
	if s, err = d.jc.Compile(u); err != nil {
		return nil, err
	}
	d.compiled[key] = s
	return s, nil
}

// lenientRegexp compiles a pattern with Go's regexp package; one it cannot compile matches everything.
func lenientRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return anything(s), nil
	}
	return re, nil
}

type anything string

func (a anything) String() string          { return string(a) }
func (a anything) MatchString(string) bool { return true }

// Validator is a schema compiled against a Document (Document.Compile), for Options.Against. It is immutable and
// safe for concurrent use.
type Validator struct{ compiled *jsonschema.Schema }

// Compile compiles doc, a JSON Schema whose `$ref`s may name the document's locations (documentURL#pointer), against the
// document: what the document's schemas share is compiled once for every schema compiled against it. The error
// says why doc cannot be compiled, without any value of it.
func (d *Document) Compile(doc map[string]any) (*Validator, error) {
	s, err := d.compile(doc)
	if err != nil {
		return nil, fmt.Errorf("%s", compileError(err))
	}
	return &Validator{compiled: s}, nil
}

// CompileAll compiles each of docs against the document (Compile), all in one resource of the validator's compiler
// so that it reads, collects and checks them in one pass (compiling them one by one costs a resource each). out[i]
// is nil where docs[i] cannot be compiled, and errs[i] says why.
func (d *Document) CompileAll(docs []map[string]any) (out []*Validator, errs []error) {
	out, errs = make([]*Validator, len(docs)), make([]error, len(docs))
	keys := make([]string, len(docs))
	var batch []int
	first := map[string]int{} // a schema alike an earlier one of the batch is compiled with it
	alike := map[int]int{}
	d.mu.Lock()
	for i, doc := range docs {
		b, err := json.Marshal(doc)
		if err != nil {
			errs[i] = err
			continue
		}
		keys[i] = string(b)
		if s := d.compiled[keys[i]]; s != nil {
			out[i] = &Validator{compiled: s}
			continue
		}
		if j, ok := first[keys[i]]; ok {
			alike[i] = j
			continue
		}
		first[keys[i]] = i
		batch = append(batch, i)
	}
	defsKey := "$defs"
	if !d.dialect.modern() {
		defsKey = "definitions"
	}
	failed := len(batch) == 0
	var u string
	if !failed {
		defs := make(map[string]any, len(batch))
		d.n++
		u = fmt.Sprintf("%s:batch:%d", documentURL, d.n)
		for _, i := range batch {
			// The schema itself when it holds only JSON values (its top level copied, to take an $id); else decoded
			// from its JSON.
			var v any = maps.Clone(docs[i])
			if docs[i] == nil || !plainJSON(docs[i]) {
				var err error
				if v, err = jsonschema.UnmarshalJSON(bytes.NewReader([]byte(keys[i]))); err != nil {
					errs[i] = err
					continue
				}
			}
			if m, ok := v.(map[string]any); ok && ownResource(keys[i]) {
				// Its own resource: its "#/..." references stay its own.
				m["$id"] = fmt.Sprintf("%s:batch:%d:%d", documentURL, d.n, i)
			}
			defs[strconv.Itoa(i)] = v
		}
		if err := d.jc.AddResource(u, map[string]any{defsKey: defs}); err != nil {
			failed = true
		}
	}
	for _, i := range batch {
		if errs[i] != nil {
			continue
		}
		var s *jsonschema.Schema
		var err error
		if !failed {
			s, err = d.compileLocked(u + "#/" + defsKey + "/" + strconv.Itoa(i))
			if err != nil && i == batch[0] {
				failed = true // the batch itself is refused (one schema fails its meta-schema): one by one
			}
		}
		if failed || err != nil {
			d.mu.Unlock()
			v, e := d.Compile(docs[i])
			d.mu.Lock()
			if v != nil {
				out[i] = v
			}
			errs[i] = e
			continue
		}
		d.compiled[keys[i]] = s
		out[i] = &Validator{compiled: s}
	}
	d.mu.Unlock()
	for i, j := range alike {
		out[i], errs[i] = out[j], errs[j]
	}
	return out, errs
}

// ownResource reports whether a schema of a batch (its canonical JSON) must be a resource of its own: it refers to
// itself ("#..."), or names itself or its dialect, so where its resource begins is part of its meaning. The others
// are plain subschemas of the batch: the validator looks a reference's resource up among a document's resources one
// by one, so a resource per schema made each reference of a batch cost as many steps as the batch has schemas
// (Microsoft Graph: 11,320).
func ownResource(canonical string) bool {
	for _, k := range []string{`"$ref":"#`, `"$id"`, `"$anchor"`, `"$dynamic`, `"$recursive`, `"$schema"`} {
		if strings.Contains(canonical, k) {
			return true
		}
	}
	return false
}

// compileLocked compiles the schema at loc; d.mu is held.
func (d *Document) compileLocked(loc string) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cannot be compiled")
		}
	}()
	return d.jc.Compile(loc)
}
