package allowlist

import (
	"reflect"
	"testing"
)

// TestDecodeFastMatchesEncodingJSON: the ojg fast path decodes exactly what encoding/json does, and declines what
// it could not (numbers, other fields, other shapes).
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	for _, tt := range []struct {
		data string
		fast bool
	}{
		{`{}`, true},
		{`{"repo":{"sealed":true,"values":["o/r"]},"label":{"values":["a","b\u00e9\n\u003c\u0026","😀"]}}`, true},
		{`{"label":{"values":["\ud83d\ude00"]}}`, false},
		{"{\"label\":{\"values\":[\"\xff\"]}}", false},
		{`{"x":{"values":[null,true,false,{"k":["v",{"z":null}]},[]]}}`, true},
		{`{"x":{"values":null}}`, true},
		{`{"x":{"sealed":false}}`, true},
		{`{"x":{"values":[1.50]}}`, false},
		{`{"x":{"values":[{"n":12345678901234567890}]}}`, false},
		{`{"x":{"Sealed":true,"values":[]}}`, false},
		{`{"x":{"values":"one"}}`, false},
		{`{"x":{"sealed":"yes"}}`, false},
		{`{"x":[]}`, false},
		{`[]`, false},
		{`{"x":{"values":[]}`, false},
	} {
		got, ok := decodeFast([]byte(tt.data))
		if ok != tt.fast {
			t.Errorf("decodeFast(%s): ok %v, want %v", tt.data, ok, tt.fast)
		}
		if !ok {
			continue
		}
		want, err := decodeStrict([]byte(tt.data))
		if err != nil {
			t.Fatalf("decodeStrict(%s): %v", tt.data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeFast(%s) = %#v, want %#v", tt.data, got, want)
		}
	}
}
