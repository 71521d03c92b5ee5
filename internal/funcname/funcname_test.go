package funcname

import (
	"regexp"
	"strings"
	"testing"
)

var valid = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestClean(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"repos/get":            "repos_get",
		"find pet by id":       "find_pet_by_id",
		"__a--b__":             "a_b",
		"GetV1Customers":       "GetV1Customers",
		"issues/list-for-repo": "issues_list_for_repo",
		"///":                  "",
		"émoji✓ok":             "moji_ok",
		"a_b":                  "a_b",
		"get /pets/{petId}":    "get_pets_petId",
		"café":                 "caf",
		"1st":                  "1st",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNameFallsBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, fallback, want string }{
		{"repos/get", "get /repos", "repos_get"},
		{"1st-op", "get /first", "get_first"},
		{"", "post /pets", "post_pets"},
		{"!!!", "delete /pets/{id}", "delete_pets_id"},
		{"", "", ""},
	} {
		if got := Name(c.in, c.fallback); got != c.want {
			t.Errorf("Name(%q, %q) = %q, want %q", c.in, c.fallback, got, c.want)
		}
	}
}

func TestShortenIsStableAndWithinTheLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("PostV1BillingPortalConfigurationsConfiguration", 3)
	a := Name(long, "")
	if len(a) != MaxLen || !valid.MatchString(a) {
		t.Fatalf("Name(long) = %q (%d bytes)", a, len(a))
	}
	if b := Name(long, ""); b != a {
		t.Fatalf("not stable: %q then %q", a, b)
	}
	other := Name(long+"X", "")
	if other == a || other[:40] != a[:40] {
		t.Fatalf("two long names sharing a prefix: %q and %q", a, other)
	}
	if got := Shorten("short", MaxLen); got != "short" {
		t.Fatalf("Shorten changed a short name: %q", got)
	}
}

func TestSuffixKeepsTheLimit(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"x", strings.Repeat("y", 60), strings.Repeat("z", 64)} {
		got := Suffix(n, "tag", MaxLen)
		if !valid.MatchString(got) || !strings.HasSuffix(got, "_"+Hash("tag")) {
			t.Errorf("Suffix(%d bytes) = %q", len(n), got)
		}
	}
}

func TestJoinIsAlwaysAValidName(t *testing.T) {
	t.Parallel()
	for _, parts := range [][]string{
		{"repo.files-v2"}, {"a.b-c", "read_file"}, {"!!!"}, {"", ""},
		{strings.Repeat("k", 50), strings.Repeat("action_", 9)},
	} {
		got := Join(parts...)
		if !valid.MatchString(got) {
			t.Errorf("Join(%q) = %q", parts, got)
		}
	}
	if got := Join("a.b-c", "read_file"); got != "a_b_c_read_file" {
		t.Errorf("Join = %q", got)
	}
}
