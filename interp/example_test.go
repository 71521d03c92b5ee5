package interp_test

import (
	"encoding/json"
	"fmt"

	"github.com/commonagents-go/tool/interp"
)

func ExampleParse() {
	t, err := interp.Parse("Bearer {auth.github()} for {settings['github.owner']}")
	if err != nil {
		panic(err)
	}
	for _, r := range t.Refs() {
		fmt.Println(r.Root, r.Steps[0].Name, r.Call)
	}
	_, err = interp.Parse("{paramters.path}")
	fmt.Println(err)
	// Output:
	// auth github true
	// settings github.owner false
	// offset 1: unknown root "paramters" (did you mean "parameters"?)
}

func ExampleValue_Render() {
	body, err := interp.ParseValue(map[string]any{
		"message": "Update {parameters.path}",
		"count":   "{parameters.count}",
		"since":   "{parameters.since}",
	})
	if err != nil {
		panic(err)
	}
	params := map[string]any{"path": "README.md", "count": 3}
	v, err := body.Render(interp.ResolverFunc(func(ref interp.Ref) (any, error) {
		v, _ := interp.Lookup(params, ref.Steps)
		return v, nil
	}))
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
	// Output: {"count":3,"message":"Update README.md","since":null}
}

func ExampleURL_Render() {
	trusted := func(ref interp.Ref) bool { return ref.Root == interp.RootSettings }
	u, err := interp.ParseURL("{settings.base_url}/repos/{parameters.repo}/contents/{parameters.path}?ref={parameters.ref}", trusted)
	if err != nil {
		panic(err)
	}
	values := map[string]any{
		"settings.base_url": "https://api.github.com/",
		"parameters.repo":   "tool",
		"parameters.path":   "docs/a b.md",
	}
	resolve := interp.ResolverFunc(func(ref interp.Ref) (any, error) { return values[ref.Text], nil })
	s, err := u.Render(resolve)
	fmt.Println(s, err)

	values["parameters.path"] = "../../secrets"
	_, err = u.Render(resolve)
	fmt.Println(err)
	// Output:
	// https://api.github.com/repos/tool/contents/docs/a%20b.md <nil>
	// unsafe value for {parameters.path}: a path segment may not be "." or ".."
}
