package interp

import (
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// trustConfig trusts the roots SPEC §4.4 lets supply a URL prefix.
func trustConfig(ref Ref) bool {
	switch ref.Root {
	case RootSettings, RootRuntime, RootMount, RootAgent:
		return true
	}
	return false
}

// valuesResolver serves values by token text; tokens it lacks resolve to nil.
type valuesResolver map[string]any

func (v valuesResolver) Resolve(ref Ref) (any, error) { return v[ref.Text], nil }

func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		offset int
	}{
		{"", 0},
		{"/v1/{parameters.x}", 0},
		{"example.com/x", 0},
		{" https://example.com/", 0},
		{"ftp://example.com/", 0},
		{"https:/example.com/", 0},
		{"javascript://example.com/", 0},
		{"{parameters.base}/x", 0},
		{"{context.base}/x", 0},
		{"x{settings.base}/x", 0},
		{"{settings.base}x", 15},
		{"{settings.base}{parameters.p}", 15},
		{"{settings.base}{{x", 15},
		{"https:///x", 0},
		{"https://example.com:abc/", 0},
		{"https://exa mple.com/", 0},
		{"https://example.com/%zz", 0},
		{"https://example.com/%{parameters.p}", 0},
		{"https://example.com/{paramters.x}", 21},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			u, err := ParseURL(tt.src, trustConfig)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("ParseURL(%q) = %v, %v; want *Error", tt.src, u, err)
			}
			if perr.Offset != tt.offset {
				t.Errorf("offset = %d, want %d (%v)", perr.Offset, tt.offset, perr)
			}
		})
	}
}

func TestParseURLNilTrusted(t *testing.T) {
	t.Parallel()
	if _, err := ParseURL("{settings.base}/x", nil); err == nil {
		t.Error("a nil trusted func trusted a prefix")
	}
	if _, err := ParseURL("https://example.com/{parameters.x}", nil); err != nil {
		t.Errorf("a literal authority needs no trust: %v", err)
	}
}

func TestURLAuthorityRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src       string
		authority []string
	}{
		{"https://example.com/{parameters.a}?b={parameters.b}", nil},
		{"{settings.base}/x/{parameters.a}", []string{"settings.base"}},
		{"{settings.base}", []string{"settings.base"}},
		{"https://{parameters.tenant}.example.com/{parameters.a}", []string{"parameters.tenant"}},
		{"http://{settings.host}:{settings.port}", []string{"settings.host", "settings.port"}},
		{"https://{settings.host}?q={parameters.q}", []string{"settings.host"}},
		{"https://example.com#{parameters.f}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			u, err := ParseURL(tt.src, trustConfig)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range u.AuthorityRefs() {
				got = append(got, r.Text)
			}
			if !reflect.DeepEqual(got, tt.authority) {
				t.Errorf("AuthorityRefs() = %q, want %q", got, tt.authority)
			}
			if len(u.Refs()) != strings.Count(tt.src, "{") || u.Source() != tt.src {
				t.Errorf("Refs() = %+v, Source() = %q", u.Refs(), u.Source())
			}
		})
	}
}

func TestURLRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		values valuesResolver
		want   string
	}{
		{"literal only", "https://example.com/a/b?c=d#e", nil, "https://example.com/a/b?c=d#e"},
		{"host only", "https://example.com", nil, "https://example.com"},
		{"github contents", "https://api.github.com/repos/{settings.github.owner}/{settings.github.repo}/contents/{parameters.path}",
			valuesResolver{"settings.github.owner": "o", "settings.github.repo": "r", "parameters.path": "docs/read me.md"},
			"https://api.github.com/repos/o/r/contents/docs/read%20me.md"},
		{"prefix", "{settings.base_url}/items/{parameters.id}",
			valuesResolver{"settings.base_url": "https://api.example.com/v1/", "parameters.id": 42},
			"https://api.example.com/v1/items/42"},
		{"prefix several slashes", "{settings.base_url}/x",
			valuesResolver{"settings.base_url": "http://localhost:8080//"}, "http://localhost:8080/x"},
		{"prefix alone", "{runtime.api_root}", valuesResolver{"runtime.api_root": "https://hooks.example.com/api"},
			"https://hooks.example.com/api"},
		{"prefix query", "{settings.base}?q={parameters.q}",
			valuesResolver{"settings.base": "https://a.example.com", "parameters.q": "a b&c=d"},
			"https://a.example.com?q=a+b%26c%3Dd"},
		{"authority tokens", "https://{settings.host}:{settings.port}/v1",
			valuesResolver{"settings.host": "api.example.com", "settings.port": 8443}, "https://api.example.com:8443/v1"},
		{"authority subdomain", "https://{parameters.tenant}.example.com/",
			valuesResolver{"parameters.tenant": "acme"}, "https://acme.example.com/"},
		{"ipv6 authority", "http://{settings.host}/", valuesResolver{"settings.host": "[::1]:9000"},
			"http://[::1]:9000/"},
		{"userinfo literal", "https://user@example.com/{parameters.p}", valuesResolver{"parameters.p": "x"},
			"https://user@example.com/x"},
		{"upper-case scheme", "HTTPS://example.com/{parameters.p}", valuesResolver{"parameters.p": "x"},
			"HTTPS://example.com/x"},
		{"query and fragment", "https://example.com/s?q={parameters.q}&n={parameters.n}#{parameters.f}",
			valuesResolver{"parameters.q": "a/b?c#d", "parameters.n": 1.5, "parameters.f": "x y"},
			"https://example.com/s?q=a%2Fb%3Fc%23d&n=1.5#x+y"},
		{"query name token", "https://example.com/?{parameters.k}=v", valuesResolver{"parameters.k": "a=b"},
			"https://example.com/?a%3Db=v"},
		{"token mid segment", "https://example.com/v{parameters.n}/file-{parameters.f}.json",
			valuesResolver{"parameters.n": 2, "parameters.f": "a/b"}, "https://example.com/v2/file-a/b.json"},
		{"escaped braces", "https://example.com/{{x}}/{parameters.p}", valuesResolver{"parameters.p": "y"},
			"https://example.com/{x}/y"},
		{"object value", "https://example.com/?f={parameters.f}", valuesResolver{"parameters.f": map[string]any{"a": 1}},
			"https://example.com/?f=%7B%22a%22%3A1%7D"},
		{"null path value", "https://example.com/a/{parameters.p}/b", nil, "https://example.com/a//b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, err := ParseURL(tt.src, trustConfig)
			if err != nil {
				t.Fatalf("ParseURL: %v", err)
			}
			got, err := u.Render(tt.values)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestURLQueryNullOmitted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		values valuesResolver
		want   string
	}{
		{"https://e.com/?a={parameters.a}", nil, "https://e.com/"},
		{"https://e.com/?a={parameters.a}&b=2", nil, "https://e.com/?b=2"},
		{"https://e.com/?b=2&a={parameters.a}", nil, "https://e.com/?b=2"},
		{"https://e.com/?b=2&a={parameters.a}&c=3", nil, "https://e.com/?b=2&c=3"},
		{"https://e.com/?a={parameters.a}&b={parameters.b}#f", nil, "https://e.com/#f"},
		{"https://e.com/?a={parameters.a}&b={parameters.b}", valuesResolver{"parameters.b": ""}, "https://e.com/?b="},
		{"https://e.com/?a={parameters.a}", valuesResolver{"parameters.a": false}, "https://e.com/?a=false"},
		{"https://e.com/?a={parameters.a}", valuesResolver{"parameters.a": 0}, "https://e.com/?a=0"},
		// Only a whole value that is one token is dropped.
		{"https://e.com/?a=x{parameters.a}", nil, "https://e.com/?a=x"},
		{"https://e.com/?a={parameters.a}{parameters.b}", nil, "https://e.com/?a="},
		{"https://e.com/?{parameters.a}", nil, "https://e.com/?"},
		{"https://e.com/?=={parameters.a}", nil, "https://e.com/?=="},
		{"https://e.com/?&a={parameters.a}", nil, "https://e.com/?"},
		{"https://e.com/?", nil, "https://e.com/?"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			u, err := ParseURL(tt.src, trustConfig)
			if err != nil {
				t.Fatalf("ParseURL: %v", err)
			}
			got, err := u.Render(tt.values)
			if err != nil || got != tt.want {
				t.Errorf("Render() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestURLInjection(t *testing.T) {
	t.Parallel()
	const src = "https://api.example.com/repos/{parameters.owner}/files/{parameters.path}?ref={parameters.ref}#{parameters.frag}"
	u, err := ParseURL(src, trustConfig)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value  string
		want   string // "" = unsafe, with unsafeToken to blame
		unsafe string
	}{
		{value: "../admin", unsafe: "parameters.owner"},
		{value: "..", unsafe: "parameters.owner"},
		{value: ".", unsafe: "parameters.owner"},
		{value: "a/../b", unsafe: "parameters.owner"},
		{value: "a/./b", unsafe: "parameters.owner"},
		{value: "a/..", unsafe: "parameters.owner"},
		{value: "...", want: "https://api.example.com/repos/.../files/...?ref=...#..."},
		{value: "..a", want: "https://api.example.com/repos/..a/files/..a?ref=..a#..a"},
		{value: "a/b", want: "https://api.example.com/repos/a/b/files/a/b?ref=a%2Fb#a%2Fb"},
		{value: "/abs", want: "https://api.example.com/repos//abs/files//abs?ref=%2Fabs#%2Fabs"},
		{value: "?x=1", want: "https://api.example.com/repos/%3Fx=1/files/%3Fx=1?ref=%3Fx%3D1#%3Fx%3D1"},
		{value: "#frag", want: "https://api.example.com/repos/%23frag/files/%23frag?ref=%23frag#%23frag"},
		{value: "%2e%2e", want: "https://api.example.com/repos/%252e%252e/files/%252e%252e?ref=%252e%252e#%252e%252e"},
		{value: "%2E.", want: "https://api.example.com/repos/%252E./files/%252E.?ref=%252E.#%252E."},
		{value: "@evil.com", want: "https://api.example.com/repos/@evil.com/files/@evil.com?ref=%40evil.com#%40evil.com"},
		{value: `..\..\etc`, want: `https://api.example.com/repos/..%5C..%5Cetc/files/..%5C..%5Cetc?ref=..%5C..%5Cetc#..%5C..%5Cetc`},
		{value: "a\r\nX-Evil: 1", want: "https://api.example.com/repos/a%0D%0AX-Evil:%201/files/a%0D%0AX-Evil:%201?ref=a%0D%0AX-Evil%3A+1#a%0D%0AX-Evil%3A+1"},
		{value: `"'<>`, want: "https://api.example.com/repos/%22%27%3C%3E/files/%22%27%3C%3E?ref=%22%27%3C%3E#%22%27%3C%3E"},
		{value: "ünï/日本", want: "https://api.example.com/repos/%C3%BCn%C3%AF/%E6%97%A5%E6%9C%AC/files/%C3%BCn%C3%AF/%E6%97%A5%E6%9C%AC?ref=%C3%BCn%C3%AF%2F%E6%97%A5%E6%9C%AC#%C3%BCn%C3%AF%2F%E6%97%A5%E6%9C%AC"},
		{value: "..;/x", want: "https://api.example.com/repos/..%3B/x/files/..%3B/x?ref=..%3B%2Fx#..%3B%2Fx"},
		{value: "//evil.com", want: "https://api.example.com/repos///evil.com/files///evil.com?ref=%2F%2Fevil.com#%2F%2Fevil.com"},
		{value: "a&b=c", want: "https://api.example.com/repos/a&b=c/files/a&b=c?ref=a%26b%3Dc#a%26b%3Dc"},
		{value: "\x00", want: "https://api.example.com/repos/%00/files/%00?ref=%00#%00"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			got, err := u.Render(ResolverFunc(func(Ref) (any, error) { return tt.value, nil }))
			if tt.unsafe != "" {
				var unsafe *UnsafeValueError
				if !errors.As(err, &unsafe) || unsafe.Token != tt.unsafe {
					t.Fatalf("Render() = %q, %v; want *UnsafeValueError for %s", got, err, tt.unsafe)
				}
				if strings.Contains(err.Error(), tt.value) && len(tt.value) > 2 {
					t.Errorf("error %q echoes the value", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Render() = %q, %v\nwant            %q", got, err, tt.want)
			}
			p, err := url.Parse(got)
			if err != nil || p.Host != "api.example.com" || p.Scheme != "https" {
				t.Errorf("rendered url %q parses to scheme %q host %q (%v)", got, p.Scheme, p.Host, err)
			}
			if q := p.Query(); len(q) != 1 || q.Get("ref") != tt.value {
				t.Errorf("query = %v, want only ref=%q", q, tt.value)
			}
			if p.Fragment != strings.ReplaceAll(tt.value, " ", "+") && !strings.Contains(tt.value, " ") {
				t.Errorf("fragment = %q", p.Fragment)
			}
		})
	}
}

func TestURLDotSegmentsAcrossLiterals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src, value string
		unsafe     bool
	}{
		{"https://e.com/a/.{parameters.p}", "", false},
		{"https://e.com/a/.{parameters.p}/b", "x", false},
		{"https://e.com/a/%2{parameters.p}/b", "e", true},
		{"https://e.com/a/%2e{parameters.p}", "e", false},
		{"https://e.com/a/{parameters.p}.", "x", false},
		{"https://e.com/a/{parameters.p}%2E", "x/", true},
		{"https://e.com/a/{parameters.p}", "x/", false},
		{"https://e.com/a/.{parameters.p}", "/", true},
	}
	for _, tt := range tests {
		t.Run(tt.src+" "+tt.value, func(t *testing.T) {
			t.Parallel()
			u, err := ParseURL(tt.src, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := u.Render(ResolverFunc(func(Ref) (any, error) { return tt.value, nil }))
			var unsafe *UnsafeValueError
			if errors.As(err, &unsafe) != tt.unsafe {
				t.Errorf("Render() = %q, %v; want unsafe %v", got, err, tt.unsafe)
			}
		})
	}
}

func TestURLAuthorityValues(t *testing.T) {
	t.Parallel()
	u, err := ParseURL("https://{parameters.tenant}.example.com/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{"evil.com/", "evil.com?", "evil.com#", "a@evil.com", `evil.com\`, "a b", "a%2f", "",
		nil, "ü", "a\nb", map[string]any{"a": 1}} {
		got, err := u.Render(ResolverFunc(func(Ref) (any, error) { return v, nil }))
		var unsafe *UnsafeValueError
		if !errors.As(err, &unsafe) || unsafe.Token != "parameters.tenant" {
			t.Errorf("authority value %q: Render() = %q, %v; want *UnsafeValueError", v, got, err)
		}
	}
}

func TestURLPrefixErrors(t *testing.T) {
	t.Parallel()
	u, err := ParseURL("{settings.base}/x/{parameters.p}", trustConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{nil, "", "/relative", "example.com", "ftp://example.com", "https://", "https:///x",
		"https://example.com?q=1", "https://example.com/#f", "mailto:a@example.com", "https://exa mple.com",
		"https://example.com\n", 42} {
		got, err := u.Render(ResolverFunc(func(ref Ref) (any, error) {
			if ref.Root == RootSettings {
				return v, nil
			}
			return "p", nil
		}))
		if !errors.Is(err, ErrPrefix) || !strings.Contains(err.Error(), "{settings.base}") {
			t.Errorf("prefix %q: Render() = %q, %v; want ErrPrefix naming the token", v, got, err)
		}
	}
}

func TestURLResolverError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, src := range []string{"{settings.base}/x", "https://{settings.h}/", "https://e.com/{parameters.p}",
		"https://e.com/?a={parameters.p}", "https://e.com/?a=x{parameters.p}", "https://e.com/#{parameters.p}"} {
		u, err := ParseURL(src, trustConfig)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Render(ResolverFunc(func(Ref) (any, error) { return nil, boom })); !errors.Is(err, boom) {
			t.Errorf("%s: Render error = %v, want boom", src, err)
		}
	}
}

// TestEscapeTables checks the escaping writers against net/url byte by byte; both escape each byte on its own.
func TestEscapeTables(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		s := string([]byte{byte(c)})
		var path, query strings.Builder
		writePathEscaped(&path, s)
		writeQueryEscaped(&query, s)
		if want := url.PathEscape(s); path.String() != want {
			t.Errorf("byte %#x: path escape %q, url.PathEscape %q", c, path.String(), want)
		}
		if want := url.QueryEscape(s); query.String() != want {
			t.Errorf("byte %#x: query escape %q, url.QueryEscape %q", c, query.String(), want)
		}
	}
	const mixed = "a b/c?d#e%f&g=h+i@j:k;l,m~n\\o\r\n日本\xff"
	var path, query strings.Builder
	writePathEscaped(&path, mixed)
	writeQueryEscaped(&query, mixed)
	if path.String() != url.PathEscape(mixed) || query.String() != url.QueryEscape(mixed) {
		t.Errorf("escaping %q: path %q query %q", mixed, path.String(), query.String())
	}
}

func TestIsDotSegment(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		".": true, "..": true, "%2e": true, "%2E%2e": true, ".%2E": true, "%2e.": true,
		"": false, "...": false, "%2e%2e%2e": false, "a": false, ".a": false, "%2": false, "%2f": false, "%": false,
	} {
		if got := isDotSegment(s); got != want {
			t.Errorf("isDotSegment(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestConcurrentRender(t *testing.T) {
	t.Parallel()
	u, err := ParseURL("{settings.base_url}/x/{parameters.path}?n={parameters.count}", trustConfig)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseValue(map[string]any{"a": []any{"{parameters.obj}", "n={parameters.count}"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for range 8 {
		go func() {
			for range 100 {
				if _, err := u.Render(testResolver); err != nil {
					done <- err
					return
				}
				if _, err := v.Render(testResolver); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestRenderParsedMatchesRender(t *testing.T) {
	t.Parallel()
	u, err := ParseURL("https://api.example.com/repos/{parameters.path}?q={parameters.q}#{parameters.f}", nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := ResolverFunc(func(ref Ref) (any, error) {
		return map[string]any{"path": "a b/c?d", "q": "x&y=1", "f": "top"}[ref.Steps[0].Name], nil
	})
	text, err := u.Render(vals)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := u.RenderParsed(vals)
	if err != nil || parsed.String() != text || parsed.Host != "api.example.com" {
		t.Errorf("RenderParsed = %v, %v; Render = %s", parsed, err, text)
	}
	if _, err := u.RenderParsed(ResolverFunc(func(Ref) (any, error) { return "..", nil })); err == nil {
		t.Errorf("RenderParsed accepted a '..' segment")
	}
}

// A rendering checked on net/http's parse (RenderUnchecked, then Check) is judged as Render judges it: the same
// texts pass, a parse failure and a parse that moves the host fail, and a host net/http stripped of its empty
// port still counts as kept.
func TestRenderingCheckOnNetHTTPParse(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"https://example.com:/a/{parameters.x}", "http://example.com/a?q={parameters.x}"} {
		u, err := ParseURL(src, trustConfig)
		if err != nil {
			t.Fatal(err)
		}
		x, err := u.RenderUnchecked(valuesResolver{"parameters.x": "v w"})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest("GET", x.Text, nil)
		if err := x.Check(req.URL, err); err != nil {
			t.Errorf("%s: %v", src, err)
		}
		if _, err := u.Render(valuesResolver{"parameters.x": "v w"}); err != nil {
			t.Errorf("%s: Render: %v", src, err)
		}
	}
	u, _ := ParseURL("https://example.com/a", trustConfig)
	x, _ := u.RenderUnchecked(nil)
	if err := x.Check(nil, errors.New("no parse")); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("a failed parse: %v", err)
	}
	moved, _ := url.Parse("https://evil.example/a")
	var unsafe *UnsafeValueError
	if err := x.Check(moved, nil); !errors.As(err, &unsafe) {
		t.Errorf("a parse with another host: %v, want *UnsafeValueError", err)
	}
}
