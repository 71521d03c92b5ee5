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

// converter turns CEL values into plain JSON values within a size budget.
type converter struct {
	left int64 // bytes of JSON the result may still take
}

// spend takes n bytes from the budget.
func (c *converter) spend(n int) error {
	if c.left -= int64(n); c.left < 0 {
		return ErrSizeLimit
	}
	return nil
}

// toJSON converts a CEL value to a plain JSON value (see the package doc). It walks the value itself rather than
// going through structpb, which would turn every int into a float64. It fails with ErrSizeLimit once the
// result's JSON would be larger than the budget: a list can hold the same large string many times over.
func (c *converter) toJSON(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.String:
		if err := c.spend(len(v) + 2); err != nil {
			return nil, err
		}
	case types.Bytes:
		if err := c.spend(len(v)*4/3 + 4); err != nil {
			return nil, err
		}
	default:
		if err := c.spend(1); err != nil { // a separator at least; numbers are short
			return nil, err
		}
	}
	return c.value(v)
}

func (c *converter) value(v ref.Val) (any, error) {
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
		return c.toJSON(v.GetValue())
	case traits.Mapper:
		return c.mapToJSON(v)
	case traits.Lister:
		return c.listToJSON(v)
	}
	return nil, fmt.Errorf("%w: %s", ErrNotJSON, v.Type().TypeName())
}

func (c *converter) mapToJSON(m traits.Mapper) (map[string]any, error) {
	out := make(map[string]any, min(int(m.Size().(types.Int)), 1024))
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
		if err := c.spend(len(key) + 3); err != nil {
			return nil, err
		}
		v, err := c.toJSON(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

func (c *converter) listToJSON(l traits.Lister) ([]any, error) {
	out := make([]any, 0, min(int(l.Size().(types.Int)), 1024)) // a lazy concatenation may claim any size
	for it := l.Iterator(); it.HasNext() == types.True; {
		v, err := c.toJSON(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
