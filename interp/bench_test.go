package interp

import (
	"net/url"
	"strings"
	"testing"
)

var benchValues = map[string]any{
	"settings.github.owner": "commonagents",
	"settings.github.repo":  "tool",
	"parameters.path":       "docs/guide/getting started.md",
	"parameters.ref":        "main",
	"parameters.none":       nil,
	"parameters.message":    "Update the getting started guide",
	"parameters.content":    "IyBHZXR0aW5nIHN0YXJ0ZWQ=",
	"parameters.count":      float64(3),
}

var benchResolver = ResolverFunc(func(ref Ref) (any, error) { return benchValues[ref.Text], nil })

func BenchmarkRenderURL(b *testing.B) {
	const src = "https://api.github.com/repos/{settings.github.owner}/{settings.github.repo}/contents/" +
		"{parameters.path}?ref={parameters.ref}&since={parameters.none}"
	u, err := ParseURL(src, trustConfig)
	if err != nil {
		b.Fatal(err)
	}
	want, err := u.Render(benchResolver)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("interp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := u.Render(benchResolver); err != nil {
				b.Fatal(err)
			}
		}
	})
	// baseline: the same URL built by hand with net/url escaping, with no structural or host checks.
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pieces := strings.Split(benchValues["parameters.path"].(string), "/")
			for i, p := range pieces {
				pieces[i] = url.PathEscape(p)
			}
			got := "https://api.github.com/repos/" + url.PathEscape(benchValues["settings.github.owner"].(string)) +
				"/" + url.PathEscape(benchValues["settings.github.repo"].(string)) + "/contents/" +
				strings.Join(pieces, "/") + "?ref=" + url.QueryEscape(benchValues["parameters.ref"].(string))
			if got != want {
				b.Fatalf("baseline %q != %q", got, want)
			}
		}
	})
}

func BenchmarkRenderValue(b *testing.B) {
	v, err := ParseValue(map[string]any{
		"message": "{parameters.message}",
		"content": "{parameters.content}",
		"branch":  "{parameters.ref}",
		"count":   "{parameters.count}",
		"committer": map[string]any{
			"name":  "bot for {settings.github.owner}",
			"email": "bot@example.com",
		},
		"paths": []any{"{parameters.path}", "README.md"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("interp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Render(benchResolver); err != nil {
				b.Fatal(err)
			}
		}
	})
	// baseline: the same tree built by hand.
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = map[string]any{
				"message": benchValues["parameters.message"],
				"content": benchValues["parameters.content"],
				"branch":  benchValues["parameters.ref"],
				"count":   benchValues["parameters.count"],
				"committer": map[string]any{
					"name":  "bot for " + benchValues["settings.github.owner"].(string),
					"email": "bot@example.com",
				},
				"paths": []any{benchValues["parameters.path"], "README.md"},
			}
		}
	})
}

func BenchmarkRenderString(b *testing.B) {
	t := MustParse("Bearer {parameters.ref} for {settings.github.owner}/{settings.github.repo} #{parameters.count}")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.RenderString(benchResolver); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	const src = "https://api.github.com/repos/{settings.github.owner}/{settings.github.repo}/contents/{parameters.path}"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseURL(src, trustConfig); err != nil {
			b.Fatal(err)
		}
	}
}
