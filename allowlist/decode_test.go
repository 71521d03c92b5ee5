package allowlist

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeStored: the stored form is read through jsonvalue, as payloads and arguments are: only valid JSON
// (no byte order mark), UTF-16 surrogate pairs and numbers as encoding/json reads them, unknown members skipped,
// and every other shape refused, by Rebase, RestoreFrom, SealedValues and UnmarshalJSON alike.
func TestDecodeStored(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		data string
		want map[string]stored // nil: refused
	}{
		{`{}`, map[string]stored{}},
		{`null`, map[string]stored{}},
		{`{"repo":{"sealed":true,"values":["o/r"]},"label":{"values":["a","b\u00e9\n\u003c\u0026","😀"]}}`,
			map[string]stored{"repo": {Sealed: true, Values: []any{"o/r"}}, "label": {Values: []any{"a", "bé\n<&", "😀"}}}},
		{`{"label":{"values":["\ud83d\ude00"]}}`, map[string]stored{"label": {Values: []any{"😀"}}}},
		{"{\"label\":{\"values\":[\"\xff\"]}}", map[string]stored{"label": {Values: []any{"\uFFFD"}}}},
		{`{"x":{"values":[null,true,{"k":["v",{"z":null}]},[]]}}`,
			map[string]stored{"x": {Values: []any{nil, true, map[string]any{"k": []any{"v", map[string]any{"z": nil}}}, []any{}}}}},
		{`{"x":{"values":null},"y":null,"z":{"sealed":false}}`, map[string]stored{"x": {}, "y": {}, "z": {}}},
		{`{"x":{"values":[1.50,42,12345678901234567890]}}`,
			map[string]stored{"x": {Values: []any{1.5, int64(42), json.Number("12345678901234567890")}}}},
		{`{"x":{"values":[],"since":3}}`, map[string]stored{"x": {Values: []any{}}}},
		{"\xef\xbb\xbf{}", nil},
		{`{"x":{"values":[1.]}}`, nil},
		{`{"x":{"values":"one"}}`, nil},
		{`{"x":{"sealed":"yes"}}`, nil},
		{`{"x":[]}`, nil},
		{`[]`, nil},
		{`{"x":{"values":[]}`, nil},
		{`{"x":{"values":[]}} {}`, nil},
	} {
		got, err := decodeStored([]byte(tt.data))
		if (err == nil) != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("decodeStored(%q) = %#v, %v; want %#v", tt.data, got, err, tt.want)
		}
		_, rebaseErr := New(3).Rebase([]byte(tt.data))
		unmarshalErr := New(3).UnmarshalJSON([]byte(tt.data))
		if (rebaseErr == nil) != (unmarshalErr == nil) || (rebaseErr == nil) != (err == nil) {
			t.Errorf("%q: Rebase %v, UnmarshalJSON %v: the readings differ", tt.data, rebaseErr, unmarshalErr)
		}
	}
}
