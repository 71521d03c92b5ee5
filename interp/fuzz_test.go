package interp

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// fuzzResolver returns a value of a different JSON type for each shape of ref, and an error for poll refs.
var fuzzResolver = ResolverFunc(func(ref Ref) (any, error) {
	if ref.Root == RootPoll {
		return nil, errors.New("no poll here")
	}
	if ref.Root == RootSettings || ref.Root == RootRuntime {
		return "https://api.example.com/base/", nil
	}
	switch len(ref.Steps) % 5 {
	case 0:
		return map[string]any{"k": []any{1.5, "../x", nil}}, nil
	case 1:
		return "../a b/?#%2e{}", nil
	case 2:
		return 1e21, nil
	case 3:
		return nil, nil
	}
	return true, nil
})

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "plain", "{parameters.path}", "a {settings['github.token']} b {auth.github()}", `{"a": {"b": 1}}`,
		"{{x}} }} {{", "{event.payload.items[0].name}", "{paramters.x}", "{parameters.x", "{auth.github}",
		"https://api.example.com/repos/{parameters.owner}/{parameters.repo}?ref={parameters.ref}#{context.f}",
		"{settings.base_url}/v1/{parameters.id}?q={parameters.q}&n={parameters.n}", "https://{agent.name}.x.com/",
		"{item['a\"b'][3]}", "{subscription.id}{subscribe.x}", "{poll.cursor}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) || perr.Offset < 0 || perr.Offset > len(src) {
				t.Fatalf("Parse(%q) error %v: want *Error with an offset inside the source", src, err)
			}
			return
		}
		if tmpl.Source() != src {
			t.Fatalf("Source() = %q, want %q", tmpl.Source(), src)
		}
		for _, r := range tmpl.Refs() {
			if !isRoot(r.Root) || !strings.HasPrefix(src[r.Offset:], "{"+r.Text+"}") {
				t.Fatalf("ref %+v does not match the source %q", r, src)
			}
		}
		// Writing the parts back in canonical form parses to the same parts.
		var canon strings.Builder
		for _, p := range tmpl.parts {
			if p.ref < 0 {
				canon.WriteString(Escape(p.lit))
			} else {
				canon.WriteString(tmpl.refs[p.ref].String())
			}
		}
		again, err := Parse(canon.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon.String(), src, err)
		}
		if len(again.parts) != len(tmpl.parts) || len(again.refs) != len(tmpl.refs) {
			t.Fatalf("canonical form %q of %q parses differently", canon.String(), src)
		}
		for i, p := range again.parts {
			q := tmpl.parts[i]
			if p.ref != q.ref || p.lit != q.lit || p.ref >= 0 && again.refs[p.ref].Text != tmpl.refs[q.ref].Text {
				t.Fatalf("canonical form %q of %q parses differently at part %d", canon.String(), src, i)
			}
		}
		v, err := tmpl.Render(fuzzResolver)
		if _, single := tmpl.SingleRef(); err == nil && !single {
			if _, ok := v.(string); !ok {
				t.Fatalf("Render of a mixed template returned %T", v)
			}
		}
		if !tmpl.HasRefs() && (err != nil || v != tmpl.Literal()) {
			t.Fatalf("Render of a literal template = %v, %v; want %q", v, err, tmpl.Literal())
		}
		_, _ = tmpl.RenderString(fuzzResolver)
		if val, err := ParseValue(map[string]any{"a": []any{src}}); err == nil {
			_, _ = val.Render(fuzzResolver)
		}

		u, err := ParseURL(src, trustConfig)
		if err != nil {
			return
		}
		out, err := u.Render(fuzzResolver)
		if err != nil {
			return
		}
		if p, err := url.Parse(out); err != nil || p.Host == "" || p.Scheme != "http" && p.Scheme != "https" {
			t.Fatalf("URL %q rendered %q: not an absolute http(s) url", src, out)
		}
	})
}

func FuzzRenderURL(f *testing.F) {
	for _, s := range []string{"x", "..", "../etc/passwd", "%2e%2e", "@evil.com", "a/b", "?x=1", "#f", "\r\n", `\`,
		"日本", "a/./b", "", "/", ":80", "evil.com:443", "[::1]"} {
		f.Add(s, uint8(0))
	}
	type shape struct {
		src        string
		host       string
		pathBefore string // u.Path is exactly pathBefore + value + pathAfter when the value is accepted
		pathAfter  string
	}
	shapes := []shape{
		{"https://api.example.com/v1/{parameters.p}/x?q={parameters.p}&n=1#{parameters.p}", "api.example.com", "/v1/", "/x"},
		{"{settings.base}/items/{parameters.p}?q={parameters.p}", "base.example.com:8443", "/root/items/", ""},
		{"https://api.example.com:8080/{parameters.p}?q={parameters.p}", "api.example.com:8080", "/", ""},
		{"http://10.0.0.1/a{parameters.p}b?q={parameters.p}", "10.0.0.1", "/a", "b"},
	}
	f.Fuzz(func(t *testing.T, value string, pick uint8) {
		sh := shapes[int(pick)%len(shapes)]
		u, err := ParseURL(sh.src, trustConfig)
		if err != nil {
			t.Fatal(err)
		}
		out, err := u.Render(ResolverFunc(func(ref Ref) (any, error) {
			if ref.Root == RootSettings {
				return "https://base.example.com:8443/root/", nil
			}
			return value, nil
		}))
		if err != nil {
			var unsafe *UnsafeValueError
			if !errors.As(err, &unsafe) {
				t.Fatalf("value %q: Render error %v is not an *UnsafeValueError", value, err)
			}
			return
		}
		p, err := url.Parse(out)
		if err != nil {
			t.Fatalf("value %q: rendered %q does not parse: %v", value, out, err)
		}
		if p.Host != sh.host {
			t.Fatalf("value %q: rendered %q has host %q, want %q", value, out, p.Host, sh.host)
		}
		// On the wire (EscapedPath) no segment may be a dot segment even spelled %2e; once decoded (Path) none
		// may be "." or "..".
		for seg := range strings.SplitSeq(p.EscapedPath(), "/") {
			if isDotSegment(seg) {
				t.Fatalf("value %q: rendered %q has a dot segment", value, out)
			}
		}
		for seg := range strings.SplitSeq(p.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("value %q: rendered %q decodes to a dot segment", value, out)
			}
		}
		if want := sh.pathBefore + value + sh.pathAfter; p.Path != want {
			t.Fatalf("value %q: rendered %q has path %q, want %q", value, out, p.Path, want)
		}
		if q := p.Query(); q.Get("q") != value {
			t.Fatalf("value %q: rendered %q has query %v", value, out, q)
		}
	})
}

func FuzzAuthority(f *testing.F) {
	for _, s := range []string{"acme", "evil.com/", "a@b", "1:2", "[::1]", "a.b.c", "x#"} {
		f.Add(s)
	}
	u, err := ParseURL("https://{parameters.tenant}.example.com/x?q=1", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value string) {
		out, err := u.Render(ResolverFunc(func(Ref) (any, error) { return value, nil }))
		if err != nil {
			return
		}
		p, err := url.Parse(out)
		if err != nil || p.Host != value+".example.com" || p.Path != "/x" || p.RawQuery != "q=1" || p.User != nil {
			t.Fatalf("value %q: rendered %q parses to host %q path %q (%v)", value, out, p.Host, p.Path, err)
		}
	})
}
