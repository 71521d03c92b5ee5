package openapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// MaxDocumentBytes bounds one OpenAPI document (or a file an external $ref names) read at load.
const MaxDocumentBytes = 32 << 20

// fetchTimeout bounds one document fetch when Load's context sets no earlier deadline.
const fetchTimeout = 60 * time.Second

// documents caches loaded documents per location for the life of the process (SPEC §7.5: fetched once). A loaded
// *openapi3.T is never modified afterwards, so the cache holds immutable values; failures are not cached.
var documents sync.Map // location string → *cached

type cached struct {
	done chan struct{}
	doc  *openapi3.T
	err  error
}

// location turns a block's url into the cache key and the URL kin-openapi loads from: an absolute http(s) URL, or
// an absolute file path (relative paths resolve against baseDir, the manifest's directory).
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

// load returns the document at loc, loading it at most once per process. ctx bounds the fetch; a caller whose
// ctx ends while another caller's fetch of the same document is in flight stops waiting.
func load(ctx context.Context, loc *url.URL) (*openapi3.T, error) {
	key := loc.String()
	for {
		e := &cached{done: make(chan struct{})}
		if prev, loaded := documents.LoadOrStore(key, e); loaded {
			p := prev.(*cached)
			select {
			case <-p.done:
				if p.err == nil {
					return p.doc, nil
				}
				// A failed load was removed from the cache: try again with this ctx.
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		e.doc, e.err = read(ctx, loc)
		if e.err != nil {
			documents.CompareAndDelete(key, e)
		}
		close(e.done)
		return e.doc, e.err
	}
}

// read loads and resolves one document. External $refs are followed with the same bounds: from a local file to
// other files or http(s) URLs, from a remote document only to http(s) URLs (a remote document must not read local
// files).
func read(ctx context.Context, loc *url.URL) (*openapi3.T, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	remote := loc.Scheme != ""
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		return readURI(ctx, u, remote)
	}
	data, err := readURI(ctx, loc, remote)
	if err != nil {
		return nil, err
	}
	doc, err := loader.LoadFromDataWithPath(data, loc)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, fmt.Errorf("openapi version %q is not supported (use 3.0 or 3.1)", doc.OpenAPI)
	}
	return doc, nil
}

// loadClient fetches documents; ctx bounds every request.
var loadClient = &http.Client{Timeout: fetchTimeout}

func readURI(ctx context.Context, u *url.URL, remote bool) ([]byte, error) {
	switch u.Scheme {
	case "http", "https":
		return fetch(ctx, u)
	case "", "file":
		if remote {
			return nil, fmt.Errorf("a remote document may not refer to the local file %q", u.Path)
		}
		f, err := os.Open(filepath.FromSlash(u.Path))
		if err != nil {
			return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
		}
		defer f.Close()
		return limited(f)
	default:
		return nil, fmt.Errorf("scheme %q is not supported in a $ref", u.Scheme)
	}
}

func fetch(ctx context.Context, u *url.URL) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetching the OpenAPI document: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := loadClient.Do(req)
	if err != nil {
		// *url.Error quotes the whole URL; name it without its password.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("fetching the OpenAPI document %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the OpenAPI document %s: status %d", u.Redacted(), resp.StatusCode)
	}
	return limited(resp.Body)
}

func limited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	if len(data) > MaxDocumentBytes {
		return nil, errors.New("the OpenAPI document is larger than 32 MiB")
	}
	return data, nil
}
