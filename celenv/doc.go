// Package celenv compiles and evaluates the CEL expressions of a tool manifest (SPEC §5).
//
// Work is staged the way cel-go stages it: one environment per [Scope] (built once per process), expressions
// compiled and type-checked once at load into immutable [Program] values, and evaluation on the hot path with a
// cost limit and the caller's context as the only per-call work.
//
// Variables are declared as dynamic maps, so payloads need no schema. Inputs are decoded JSON values
// (map[string]any, []any, string, float64 or json.Number, bool, nil). A json.Number holding an integer becomes a
// CEL int, any other number a CEL double; numbers compare across int and double (`42 == 42.0`, `x > 3`), but
// arithmetic does not mix them (`x + 1` on a double needs `x + 1.0` or `int(x)`).
//
// Results are plain JSON values: map[string]any, []any, string, int64 (CEL ints, and uints that fit), float64
// (CEL doubles, and uints that do not fit), bool and nil. Bytes become standard base64 text, timestamps RFC 3339
// text, durations CEL's text form ("90s"), an optional its value or nil. Anything else (a type, NaN, ±Inf, a map
// with keys other than strings and integers) is an evaluation error.
//
// Error messages from evaluation never carry values taken from the variables: text CEL would quote from a value is
// replaced by "…" unless it appears in the expression itself.
package celenv
