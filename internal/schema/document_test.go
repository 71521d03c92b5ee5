package schema

import "testing"

// TestCompileAllAgainstADocument pins a batch compiled against a document: schemas alike are compiled once and
// share it, a schema with its own "#/..." references keeps them its own, and each validates as written.
func TestCompileAllAgainstADocument(t *testing.T) {
	t.Parallel()
	doc, err := NewDocument(map[string]any{"definitions": map[string]any{
		"/components/schemas/Count": map[string]any{"type": "integer", "maximum": 10},
	}}, Draft7)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]any{"$ref": documentURL + "#/definitions/~1components~1schemas~1Count"}
	alike := func() map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"n": count}}
	}
	own := map[string]any{"type": "object", "properties": map[string]any{"s": map[string]any{"$ref": "#/definitions/s"}},
		"definitions": map[string]any{"s": map[string]any{"type": "string"}}}
	vs, errs := doc.CompileAll([]map[string]any{alike(), own, alike()})
	for i, e := range errs {
		if e != nil || vs[i] == nil {
			t.Fatalf("schema %d: %v", i, e)
		}
	}
	if vs[0].compiled != vs[2].compiled {
		t.Error("schemas alike compiled twice")
	}
	for _, c := range []struct {
		v     *Validator
		value map[string]any
		valid bool
	}{
		{vs[0], map[string]any{"n": 3}, true},
		{vs[2], map[string]any{"n": 11}, false},
		{vs[1], map[string]any{"s": "x"}, true},
		{vs[1], map[string]any{"s": 1}, false},
	} {
		if got := len(validate(c.v.compiled, c.value)) == 0; got != c.valid {
			t.Errorf("%v: valid = %v, want %v", c.value, got, c.valid)
		}
	}
}
