package openapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// MaxDocumentBytes bounds one OpenAPI document (or a file an external $ref names) read at load, unless the host
// sets another bound (runtime.Block.DocumentBytes, tool.Limits.DocumentBytes).
const MaxDocumentBytes = 32 << 20

// sizeOf returns the document bound a block asks for: its DocumentBytes, else MaxDocumentBytes.
func sizeOf(b *runtime.Block) int64 {
	if b.DocumentBytes > 0 {
		return b.DocumentBytes
	}
	return MaxDocumentBytes
}

// fetchTimeout bounds one document fetch when Load's context sets no earlier deadline.
const fetchTimeout = 60 * time.Second

// location turns a block's url into the URL kin-openapi loads from: an absolute http(s) URL, or an absolute file
// path (relative paths resolve against baseDir, the manifest's directory).
func location(raw, baseDir string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL or file path: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
		return u, nil
	case "file":
		raw = u.Path
	case "":
	default:
		return nil, fmt.Errorf("scheme %q is not supported", u.Scheme)
	}
	if !filepath.IsAbs(raw) {
		if baseDir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("resolving %q: %w", raw, err)
			}
			baseDir = wd
		}
		raw = filepath.Join(baseDir, raw)
	}
	return &url.URL{Path: filepath.ToSlash(filepath.Clean(raw))}, nil
}

// origin returns scheme://host[:port] of an http(s) URL, lower-cased, without the scheme's default port.
func origin(u *url.URL) string {
	host := strings.ToLower(u.Host)
	if h, port, err := net.SplitHostPort(host); err == nil &&
		(u.Scheme == "http" && port == "80" || u.Scheme == "https" && port == "443") {
		host = h
		if strings.Contains(h, ":") {
			host = "[" + h + "]"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

// originsOf returns the origins the host allows beyond a document's own, normalised and sorted.
func originsOf(b *runtime.Block) []string {
	out := make([]string, 0, len(b.RefOrigins))
	for _, s := range b.RefOrigins {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			out = append(out, origin(u))
		}
	}
	sort.Strings(out)
	return out
}

// policy says what one document may read besides itself.
type policy struct {
	remote  bool            // the document was fetched over http(s): it may not read files
	origins map[string]bool // the http(s) origins it may read from and be redirected to
}

// newPolicy allows a fetched document its own origin plus extra, a local one only extra.
func newPolicy(loc *url.URL, extra []string) *policy {
	p := &policy{remote: loc.Scheme != "", origins: map[string]bool{}}
	if p.remote {
		p.origins[origin(loc)] = true
	}
	for _, o := range extra {
		p.origins[o] = true
	}
	return p
}

// check refuses an http(s) URL on an origin the policy does not allow.
func (p *policy) check(u *url.URL, what string) error {
	if p.origins[origin(u)] {
		return nil
	}
	if p.remote {
		return fmt.Errorf("%s %s is on another origin than the document (%s): allow it with tool.WithDocumentOrigins",
			what, u.Redacted(), origin(u))
	}
	return fmt.Errorf("%s %s is on the web while the document is a local file: allow its origin %s with tool.WithDocumentOrigins",
		what, u.Redacted(), origin(u))
}

// document reads the document at raw, extra naming the origins the host allows beyond its own; a failure is an
// error whose text says why (the caller puts it at the block's url).
func readDocument(ctx context.Context, raw, baseDir string, extra []string, limit int64) (*openapi3.T, *rawSource, error) {
	loc, err := location(raw, baseDir)
	if err != nil {
		return nil, nil, err
	}
	doc, src, err := documents.load(ctx, loc, extra, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load the OpenAPI document: %w", err)
	}
	return doc, src, nil
}

// reader reads one document and the files and URLs its $refs name, under one policy.
type reader struct {
	ctx    context.Context
	policy *policy
	client *http.Client
	mu     sync.Mutex
	files  []fileStamp // every local file read, to tell when the cached document is stale
	limit  int64       // bytes one file or response may have
}

// read loads and resolves one document: kin-openapi follows its external $refs through readURI.
func read(ctx context.Context, loc *url.URL, extra []string, limit int64) (*openapi3.T, *rawSource, []fileStamp, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	r := &reader{ctx: ctx, policy: newPolicy(loc, extra), limit: limit}
	r.client = &http.Client{Timeout: fetchTimeout, CheckRedirect: r.redirect}
	newLoader := func() *openapi3.Loader {
		loader := openapi3.NewLoader()
		loader.Context = ctx
		loader.IsExternalRefsAllowed = true
		loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) { return r.readURI(u, "the $ref") }
		return loader
	}
	data, err := r.readURI(loc, "the document")
	if err != nil {
		return nil, nil, nil, err
	}
	src := &rawSource{data: data}
	// kin-openapi reads only what Load uses of its tree (kinInput), piece by piece (loadKin); should that fail, the
	// whole document, whose error is the one to report.
	var doc *openapi3.T
	if parts := kinInput(data); parts != nil {
		doc, _ = loadKin(ctx, parts)
	}
	if doc == nil {
		if doc, err = newLoader().LoadFromDataWithPath(data, loc); err != nil {
			// kin-openapi resolves a 3.1 schema's references without $id, $anchor or $defs: read such a document
			// without them, and validate against the document as written (src.strict).
			if cp := kinCopy(data); cp != nil {
				if d, e := newLoader().LoadFromDataWithPath(cp, loc); e == nil {
					doc, err, src.strict = d, nil, true
				}
			}
		}
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, nil, nil, fmt.Errorf("openapi version %q is not supported (use 3.0 or 3.1)", doc.OpenAPI)
	}
	return doc, src, r.files, nil
}

// redirect follows a redirect only to an origin the policy allows.
func (r *reader) redirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return r.policy.check(req.URL, "a redirect to")
}

func (r *reader) readURI(u *url.URL, what string) ([]byte, error) {
	switch u.Scheme {
	case "http", "https":
		if err := r.policy.check(u, what); err != nil {
			return nil, err
		}
		return r.fetch(u)
	case "", "file":
		if r.policy.remote {
			return nil, fmt.Errorf("a remote document may not refer to the local file %q", u.Path)
		}
		return r.readFile(filepath.FromSlash(u.Path))
	default:
		return nil, fmt.Errorf("scheme %q is not supported in a $ref", u.Scheme)
	}
}

func (r *reader) readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	r.mu.Lock()
	r.files = append(r.files, fileStamp{name: name, size: st.Size(), mod: st.ModTime()})
	r.mu.Unlock()
	if st.Size() > r.limit {
		return nil, tooBig(r.limit)
	}
	// One buffer of the file's size, rather than ReadAll's doublings (a 13 MB document would cost 40 MB).
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	return data, nil
}

func (r *reader) fetch(u *url.URL) ([]byte, error) {
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetching the OpenAPI document: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := r.client.Do(req)
	if err != nil {
		// *url.Error quotes the whole URL; name it without its password.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("fetching %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: status %d", u.Redacted(), resp.StatusCode)
	}
	return limited(resp.Body, r.limit)
}

func limited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, tooBig(limit)
	}
	return data, nil
}

func tooBig(limit int64) error {
	if limit%(1<<20) == 0 {
		return fmt.Errorf("the OpenAPI document is larger than %d MiB (raise the bound with tool.Limits.DocumentBytes)",
			limit>>20)
	}
	return fmt.Errorf("the OpenAPI document is larger than %d bytes (raise the bound with tool.Limits.DocumentBytes)", limit)
}
