// Package decode turns decoded JSON (map[string]any, []any, string, bool, json.Number, nil) into Go structs
// strictly: every unknown key and every value of the wrong type is reported as a field problem at its path, and
// decoding carries on, so one pass finds every problem.
//
// Struct fields are matched by their json tag names. A json.RawMessage field receives the value re-encoded, an
// `any` field receives it as is, pointers are allocated, nil leaves the zero value.
package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/suggest"
)

// JSON parses data as one JSON value, keeping numbers as json.Number. Anything but white space after the value is
// an error (Decoder.More alone would let a closing "]" or "}" through).
func JSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// Into decodes src into the value dst points to, reporting problems under p.
func Into(src any, dst any, p *field.Path) field.List {
	var errs field.List
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		errs.Add(field.Invalid(p, "internal error: decode target is %T, not a pointer", dst))
		return errs
	}
	value(src, rv.Elem(), p, &errs)
	return errs
}

var (
	rawType = reflect.TypeOf(json.RawMessage(nil))
	anyType = reflect.TypeOf((*any)(nil)).Elem()
)

func value(src any, dst reflect.Value, p *field.Path, errs *field.List) {
	if src == nil {
		return
	}
	t := dst.Type()
	switch {
	case t == rawType:
		b, err := json.Marshal(src)
		if err != nil {
			errs.Add(field.Invalid(p, "cannot encode value: %v", err))
			return
		}
		dst.SetBytes(b)
		return
	case t == anyType:
		dst.Set(reflect.ValueOf(src))
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(t.Elem()))
		}
		value(src, dst.Elem(), p, errs)
	case reflect.Struct:
		m, ok := src.(map[string]any)
		if !ok {
			errs.Add(field.Invalid(p, "must be an object, not %s", describe(src)))
			return
		}
		structFields(m, dst, p, errs)
	case reflect.Map:
		m, ok := src.(map[string]any)
		if !ok {
			errs.Add(field.Invalid(p, "must be an object, not %s", describe(src)))
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(t, len(m)))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			elem := reflect.New(t.Elem()).Elem()
			value(m[k], elem, p.Key(k), errs)
			dst.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
		}
	case reflect.Slice:
		list, ok := src.([]any)
		if !ok {
			errs.Add(field.Invalid(p, "must be a list, not %s", describe(src)))
			return
		}
		s := reflect.MakeSlice(t, len(list), len(list))
		for i, item := range list {
			value(item, s.Index(i), p.Index(i), errs)
		}
		dst.Set(s)
	case reflect.String:
		s, ok := src.(string)
		if !ok {
			errs.Add(field.Invalid(p, "must be a string, not %s", describe(src)))
			return
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := src.(bool)
		if !ok {
			errs.Add(field.Invalid(p, "must be a boolean (true or false), not %s", describe(src)))
			return
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := src.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil || dst.OverflowInt(i) {
			errs.Add(field.Invalid(p, "must be an integer, not %s", describe(src)))
			return
		}
		dst.SetInt(i)
	case reflect.Float32, reflect.Float64:
		n, ok := src.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil || math.IsInf(f, 0) {
			errs.Add(field.Invalid(p, "must be a number, not %s", describe(src)))
			return
		}
		dst.SetFloat(f)
	default:
		errs.Add(field.Invalid(p, "internal error: cannot decode into %s", t))
	}
}

func structFields(m map[string]any, dst reflect.Value, p *field.Path, errs *field.List) {
	info := fieldsOf(dst.Type())
	for _, k := range slices.Sorted(maps.Keys(m)) {
		idx, ok := info.byName[k]
		if !ok {
			errs.Add(field.Unsupported(p.Key(k), "unknown field %q%s", k, suggest.Hint(k, info.names)))
			continue
		}
		value(m[k], dst.FieldByIndex(idx), p.Key(k), errs)
	}
}

// Keys returns the json field names a struct type accepts, in declaration order.
func Keys(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return fieldsOf(t).names
}

type structInfo struct {
	byName map[string][]int
	names  []string
}

var infoCache sync.Map // reflect.Type → *structInfo; immutable once stored

func fieldsOf(t reflect.Type) *structInfo {
	if v, ok := infoCache.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{byName: map[string][]int{}}
	collect(t, nil, info)
	v, _ := infoCache.LoadOrStore(t, info)
	return v.(*structInfo)
}

func collect(t reflect.Type, prefix []int, info *structInfo) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(append([]int(nil), prefix...), i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			collect(f.Type, idx, info)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		info.byName[name] = idx
		info.names = append(info.names, name)
	}
}

// describe names the JSON type of v without showing the value itself (it may be a secret).
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
