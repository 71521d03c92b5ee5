package interp

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRoots(t *testing.T) {
	t.Parallel()
	roots := Roots()
	if len(roots) != 13 {
		t.Fatalf("Roots() has %d roots, want 13", len(roots))
	}
	for _, r := range roots {
		if !isRoot(r) {
			t.Errorf("isRoot(%q) = false", r)
		}
	}
	roots[0] = "changed"
	if Roots()[0] != RootParameters {
		t.Error("Roots() shares its slice with the caller")
	}
	if isRoot("Parameters") || isRoot("") {
		t.Error("isRoot accepts a non-root")
	}
}

func TestParseRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []Ref
	}{
		{"{parameters.path}", []Ref{{Root: "parameters", Steps: []Step{{Name: "path"}}, Text: "parameters.path"}}},
		{"{parameters}", []Ref{{Root: "parameters", Text: "parameters"}}},
		{"a {settings['github.token']} b", []Ref{{Root: "settings", Steps: []Step{{Name: "github.token"}},
			Offset: 2, Text: "settings['github.token']"}}},
		{`{context["a b"].c}`, []Ref{{Root: "context", Steps: []Step{{Name: "a b"}, {Name: "c"}},
			Text: `context["a b"].c`}}},
		{"{event.payload.items[12].name}", []Ref{{Root: "event",
			Steps: []Step{{Name: "payload"}, {Name: "items"}, {Index: 12, IsIndex: true}, {Name: "name"}},
			Text:  "event.payload.items[12].name"}}},
		{"{item[0]}", []Ref{{Root: "item", Steps: []Step{{IsIndex: true}}, Text: "item[0]"}}},
		{"{auth.github()}", []Ref{{Root: "auth", Steps: []Step{{Name: "github"}}, Call: true, Text: "auth.github()"}}},
		{"{auth.github}", []Ref{{Root: "auth", Steps: []Step{{Name: "github"}}, Text: "auth.github"}}},
		{"{parameters.x-y_z9}", []Ref{{Root: "parameters", Steps: []Step{{Name: "x-y_z9"}}, Text: "parameters.x-y_z9"}}},
		{`{settings['}']}`, []Ref{{Root: "settings", Steps: []Step{{Name: "}"}}, Text: `settings['}']`}}},
		{"x{agent.name}{agent.namespace}", []Ref{
			{Root: "agent", Steps: []Step{{Name: "name"}}, Offset: 1, Text: "agent.name"},
			{Root: "agent", Steps: []Step{{Name: "namespace"}}, Offset: 13, Text: "agent.namespace"}}},
		{"{{parameters.x}} {poll.cursor}", []Ref{{Root: "poll", Steps: []Step{{Name: "cursor"}}, Offset: 17,
			Text: "poll.cursor"}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			tmpl, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := tmpl.Refs(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Refs() = %+v, want %+v", got, tt.want)
			}
			if tmpl.Source() != tt.src {
				t.Errorf("Source() = %q", tmpl.Source())
			}
			if !tmpl.HasRefs() {
				t.Error("HasRefs() = false")
			}
		})
	}
}

func TestParseLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct{ src, want string }{
		{"", ""},
		{"plain", "plain"},
		{`{"a": 1}`, `{"a": 1}`},
		{`{ "a": [1, {}] }`, `{ "a": [1, {}] }`},
		{"{{parameters.x}}", "{parameters.x}"},
		{"a}b", "a}b"},
		{"}", "}"},
		{"{", "{"},
		{"{ parameters.x }", "{ parameters.x }"},
		{"{1}", "{1}"},
		{"{-x}", "{-x}"},
		{"{{{{", "{{"},
		{"}}}", "}}"},
		{"${{HOME}}", "${HOME}"},
		{"{.x}", "{.x}"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			tmpl, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tmpl.HasRefs() {
				t.Fatalf("HasRefs() = true, refs %+v", tmpl.Refs())
			}
			if got := tmpl.Literal(); got != tt.want {
				t.Errorf("Literal() = %q, want %q", got, tt.want)
			}
			if got, err := tmpl.Render(nil); err != nil || got != tt.want {
				t.Errorf("Render(nil) = %v, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src        string
		offset     int
		suggestion string
	}{
		{"{paramters.x}", 1, "parameters"},
		{"ab {Parameters.x}", 4, "parameters"},
		{"{param.x}", 1, "parameters"},
		{"{setting}", 1, "settings"},
		{"{events.x}", 1, "event"},
		{"{authorization}", 1, "auth"},
		{"{x}", 1, ""},
		{"{return 1}", 1, ""},
		{"{parameters.x", 0, ""},
		{"a{parameters", 1, ""},
		{"{parameters.x }", 13, ""},
		{"{parameters x}", 11, ""},
		{"{parameters.}", 12, ""},
		{"{parameters.", 12, ""},
		{"{parameters..x}", 12, ""},
		{"{parameters.1}", 12, ""},
		{"{parameters[x]}", 12, ""},
		{"{parameters['x}", 12, ""},
		{"{parameters['']}", 12, ""},
		{"{parameters['x'}", 15, ""},
		{"{parameters[1}", 13, ""},
		{"{parameters[01]}", 12, ""},
		{"{parameters[1234567890]}", 12, ""},
		{"{parameters[", 11, ""},
		{"{parameters.x()}", 13, ""},
		{"{auth()}", 5, ""},
		{"{auth.a.b()}", 9, ""},
		{"{auth.github(}", 13, ""},
		{"{auth.github()", 0, ""},
		{"{auth.github().x}", 14, ""},
		{"{auth.github()()}", 14, ""},
		{"{auth}", 0, ""},
		{"{auth.a.b}", 0, ""},
		{"{auth[0]}", 0, ""},
		{"ok {parameters.é}", 15, ""},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.src)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error = %v, want *Error", tt.src, err)
			}
			if perr.Offset != tt.offset || perr.Suggestion != tt.suggestion {
				t.Errorf("Parse(%q) = offset %d suggestion %q, want %d %q (%v)",
					tt.src, perr.Offset, perr.Suggestion, tt.offset, tt.suggestion, perr)
			}
			if tt.suggestion != "" && !strings.Contains(perr.Error(), tt.suggestion) {
				t.Errorf("message %q does not name the suggestion", perr.Error())
			}
		})
	}
}

func TestParseTooLong(t *testing.T) {
	t.Parallel()
	if _, err := Parse(strings.Repeat("a", MaxLen)); err != nil {
		t.Fatalf("Parse of MaxLen bytes: %v", err)
	}
	_, err := Parse(strings.Repeat("a", MaxLen+1))
	var perr *Error
	if !errors.As(err, &perr) || perr.Offset != MaxLen {
		t.Fatalf("Parse of MaxLen+1 bytes = %v, want *Error at %d", err, MaxLen)
	}
}

func TestSingleRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want bool
	}{
		{"{parameters.x}", true},
		{"{auth.github()}", true},
		{" {parameters.x}", false},
		{"{parameters.x}{parameters.y}", false},
		{"{parameters.x}}}", false},
		{"text", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			ref, ok := MustParse(tt.src).SingleRef()
			if ok != tt.want {
				t.Fatalf("SingleRef() ok = %v, want %v", ok, tt.want)
			}
			if ok && "{"+ref.Text+"}" != tt.src {
				t.Errorf("SingleRef().Text = %q", ref.Text)
			}
		})
	}
}

func TestRefsAreCopies(t *testing.T) {
	t.Parallel()
	tmpl := MustParse("{parameters.a.b}")
	refs := tmpl.Refs()
	refs[0].Steps[0].Name = "changed"
	refs[0].Root = "changed"
	if got := tmpl.Refs()[0]; got.Root != RootParameters || got.Steps[0].Name != "a" {
		t.Errorf("Refs() shares storage with the template: %+v", got)
	}
}

func TestMustParsePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("MustParse of a bad template did not panic")
		}
	}()
	MustParse("{nope}")
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "{parameters.x}", "}{", `{"a": {"b": 1}}`, "{{x}}"} {
		tmpl, err := Parse(Escape(s))
		if err != nil {
			t.Fatalf("Parse(Escape(%q)): %v", s, err)
		}
		if tmpl.HasRefs() || tmpl.Literal() != s {
			t.Errorf("Escape(%q) renders %q", s, tmpl.Literal())
		}
	}
}

func TestRefString(t *testing.T) {
	t.Parallel()
	ref, _ := MustParse("{auth.github()}").SingleRef()
	if got := ref.String(); got != "{auth.github()}" {
		t.Errorf("String() = %q", got)
	}
}
