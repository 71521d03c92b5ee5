package celenv

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// toJSON converts a CEL value to a plain JSON value (see the package doc). It walks the value itself rather than
// going through structpb, which would turn every int into a float64.
func toJSON(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if v <= math.MaxInt64 {
			return int64(v), nil
		}
		return float64(v), nil
	case types.Double:
		if f := float64(v); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, float64(v)) // NaN or ±Inf
	case types.String:
		return string(v), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(v), nil
	case types.Timestamp:
		return v.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return string(v.ConvertToType(types.StringType).(types.String)), nil
	case *types.Optional:
		if !v.HasValue() {
			return nil, nil
		}
		return toJSON(v.GetValue())
	case traits.Mapper:
		return mapToJSON(v)
	case traits.Lister:
		return listToJSON(v)
	}
	return nil, fmt.Errorf("%w: %s", ErrNotJSON, v.Type().TypeName())
}

func mapToJSON(m traits.Mapper) (map[string]any, error) {
	out := make(map[string]any, int(m.Size().(types.Int)))
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		var key string
		switch k := k.(type) {
		case types.String:
			key = string(k)
		case types.Int:
			key = strconv.FormatInt(int64(k), 10)
		case types.Uint:
			key = strconv.FormatUint(uint64(k), 10)
		default:
			return nil, fmt.Errorf("%w: map key of type %s", ErrNotJSON, k.Type().TypeName())
		}
		v, err := toJSON(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

func listToJSON(l traits.Lister) ([]any, error) {
	out := make([]any, 0, int(l.Size().(types.Int)))
	for it := l.Iterator(); it.HasNext() == types.True; {
		v, err := toJSON(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
