package allowlist

import (
	"errors"
	"fmt"

	"github.com/commonagents-go/tool/internal/jsonvalue"
)

// decodeStored decodes MarshalJSON's form through jsonvalue, the library's one reading of JSON (payloads and
// arguments go through it too): an object from name to {"sealed": bool, "values": [...]}, either member null or
// absent. A member it does not know is skipped, as encoding/json skips it, so a list written by a later version
// with more to say still reads. Numbers come as jsonvalue decodes them; every use of a value normalizes it.
func decodeStored(data []byte) (map[string]stored, error) {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("decode allow list: %w", err)
	}
	if v == nil {
		return map[string]stored{}, nil
	}
	top, isMap := v.(map[string]any)
	if !isMap {
		return nil, errors.New("decode allow list: not an object")
	}
	in := make(map[string]stored, len(top))
	for name, x := range top {
		fields, isMap := x.(map[string]any)
		if !isMap && x != nil {
			return nil, fmt.Errorf("decode allow list: %q is not an object", name)
		}
		var s stored
		switch f := fields["sealed"].(type) {
		case nil:
		case bool:
			s.Sealed = f
		default:
			return nil, fmt.Errorf("decode allow list: %q: sealed is not a boolean", name)
		}
		switch f := fields["values"].(type) {
		case nil:
		case []any:
			s.Values = f
		default:
			return nil, fmt.Errorf("decode allow list: %q: values is not a list", name)
		}
		in[name] = s
	}
	return in, nil
}
