package redact

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestTokensAreBoundedSecretsAreNot(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add("setting-password")
	for i := range MaxTokens + 10 {
		s.AddToken(fmt.Sprintf("token-%03d", i))
	}
	got := s.String("setting-password token-000 token-073")
	if strings.Contains(got, "setting-password") || strings.Contains(got, "token-073") {
		t.Errorf("String = %q: the password and the newest token must be masked", got)
	}
	if !strings.Contains(got, "token-000") {
		t.Errorf("String = %q: the oldest token is past MaxTokens and forgotten", got)
	}
	if len(s.tokens) != MaxTokens {
		t.Errorf("%d tokens kept, want %d", len(s.tokens), MaxTokens)
	}
	c := s.Clone()
	c.AddToken("only-in-clone")
	if strings.Contains(s.String("only-in-clone"), Mask) {
		t.Error("a token added to a clone masks in the original")
	}
}

func TestValueScrubsMapsWithoutChangingThem(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add("s3cret")
	in := map[string]any{"s3cret-key": "v", "nested": map[string]string{"h": "Bearer s3cret"}, "clean": "x"}
	got := s.Value(in).(map[string]any)
	if fmt.Sprint(got) != "map[[redacted]-key:v clean:x nested:map[h:Bearer [redacted]]]" {
		t.Errorf("Value = %v", got)
	}
	if _, ok := in["s3cret-key"]; !ok || in["nested"].(map[string]string)["h"] != "Bearer s3cret" {
		t.Errorf("the input was changed: %v", in)
	}
	clean := map[string]string{"a": "b"}
	if out := s.Value(clean).(map[string]string); fmt.Sprintf("%p", out) != fmt.Sprintf("%p", clean) {
		t.Error("a map with nothing to scrub was copied")
	}
}

func TestEncodedForms(t *testing.T) {
	var s Set
	s.Add(`a/b c&"d"<e>`)
	var l List
	l.Add(`a/b c&"d"<e>`)
	l.Add(s.EncodingsOf(`a/b c&"d"<e>`)...)
	for _, echoed := range []string{
		`a/b c&"d"<e>`, "YS9iIGMmImQiPGU+", "YS9iIGMmImQiPGU-", // base64 std, URL (padding-free length)
		`a%2Fb+c%26%22d%22%3Ce%3E`, `a%2Fb%20c&%22d%22%3Ce%3E`, // query and path-segment escaping
		`a/b%20c&%22d%22%3Ce%3E`,                          // a URL's path as net/url prints it (a client's error quotes the URL)
		`a/b c&\"d\"<e>`, `a/b c\u0026\"d\"\u003ce\u003e`, // JSON, without and with HTML escaping
	} {
		if got := l.Replace("<" + echoed + ">"); got != "<"+Mask+">" {
			t.Errorf("%s: scrubbed to %s", echoed, got)
		}
	}
	if !s.Has(`a/b c&"d"<e>`) || s.Has("a/b") || s.EncodingsOf("a/b") != nil {
		t.Error("Has or EncodingsOf answer for parts of a secret, or not for the secret")
	}
	if got := l.Value(map[string]any{"k": []any{"plain"}}); got.(map[string]any)["k"].([]any)[0] != "plain" {
		t.Errorf("a value without secrets changed: %v", got)
	}
}

// Set.Error masks the encoded forms too: an error quotes what a client or a driver printed.
func TestErrorMasksEncodedForms(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add(`a/b c&"d"<e>`)
	sentinel := errors.New("sentinel")
	u := &url.URL{Scheme: "http", Host: "h", Path: "/s/" + `a/b c&"d"<e>`}
	err := s.Error(fmt.Errorf("post %q: %w", u.String(), sentinel), sentinel)
	if want := `post "http://h/s/` + Mask + `": sentinel`; err.Error() != want || !errors.Is(err, sentinel) {
		t.Errorf("Error = %q (errors.Is %t), want %q and the sentinel kept", err, errors.Is(err, sentinel), want)
	}
	clean := errors.New("no secret")
	if s.Error(clean) != clean {
		t.Error("an error without a secret was replaced")
	}
}

func TestValueWithMasksBothInOneWalk(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add("task-secret")
	var l List
	l.Add("", "call-derived", "c2")
	l.Add("longer-call-value")
	in := map[string]any{"a": "task-secret and call-derived", "b": []any{"longer-call-value"}, "c": "c", "d": "clean"}
	got := fmt.Sprint(s.ValueWith(&l, in))
	want := "map[a:[redacted] and [redacted] b:[[redacted]] c:c d:clean]"
	if got != want {
		t.Errorf("ValueWith = %s, want %s", got, want)
	}
	if fmt.Sprint(s.ValueWith(nil, in)) != "map[a:[redacted] and call-derived b:[longer-call-value] c:c d:clean]" {
		t.Errorf("ValueWith(nil) = %v", s.ValueWith(nil, in))
	}
	var none Set
	if fmt.Sprint(none.ValueWith(&l, in)) != "map[a:task-secret and [redacted] b:[[redacted]] c:c d:clean]" {
		t.Errorf("ValueWith without task secrets = %v", none.ValueWith(&l, in))
	}
	if l.Contains("c") || !l.Contains("xc2x") || l.Len() != 4 {
		t.Errorf("Contains(c) = %v, Contains(xc2x) = %v, Len = %d", l.Contains("c"), l.Contains("xc2x"), l.Len())
	}
}

// TestProbes: searching a value set's probes tells whether a text holds one of the values, as searching them all
// does, and probes are fewer when forms hold one another (a raw base64 form is in its padded one).
func TestProbes(t *testing.T) {
	sets := [][]string{
		append([]string{"sk-SECRET-123"}, Encodings("sk-SECRET-123")...),
		append([]string{"Bearer sk-SECRET-123"}, Encodings("Bearer sk-SECRET-123")...),
		Encodings("p@ss/wörd?&"),
		{"ab", "abc", "xabcx", "", "ab", "zz"},
	}
	for _, vs := range sets {
		probes := Probes(vs)
		if len(probes) == 0 || len(probes) > len(vs) {
			t.Fatalf("Probes(%q) = %q", vs, probes)
		}
		var all, probed List
		all.Add(vs...)
		probed.AddProbed(vs, probes)
		texts := []string{"", "nothing here", "x" + vs[0] + "y", "ab", "zzz", "QmVhcmVyIHNrLVNFQ1JFVC0xMjM", "c2stU0VDUkVULTEyMw=="}
		for _, v := range vs {
			if len(v) > 1 {
				texts = append(texts, "<"+v+">", v[1:], v[:len(v)-1])
			}
		}
		for _, text := range texts {
			if got, want := probed.Contains(text), all.Contains(text); got != want {
				t.Errorf("values %q, probes %q: Contains(%q) = %v, want %v", vs, probes, text, got, want)
			}
			if got, want := probed.Replace(text), all.Replace(text); got != want {
				t.Errorf("values %q: Replace(%q) = %q, want %q", vs, text, got, want)
			}
		}
	}
	if got := Probes([]string{"ab", "abc", "xabcx", "", "ab", "zz"}); !slices.Equal(got, []string{"ab", "zz"}) {
		t.Errorf("Probes = %q, want [ab zz]", got)
	}
	if b64 := Encodings("sk-SECRET-123"); len(Probes(b64)) >= len(b64) {
		t.Errorf("Probes(%q) = %q: the raw base64 forms hold no padding, so the padded ones need no search", b64, Probes(b64))
	}
}
