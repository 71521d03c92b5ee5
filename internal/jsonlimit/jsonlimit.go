// Package jsonlimit bounds the shape of a JSON text before it is parsed: how deep it nests and how many values it
// holds. A parser builds a Go value per JSON value, so a 1 MiB body of `[[[[…` or `[0,0,0,…` costs tens of
// megabytes once parsed; Check refuses such a body by reading its bytes once, without allocating.
package jsonlimit

import (
	"bytes"
	"fmt"
)

// Error says which bound a text went over.
type Error struct {
	// Depth is true when the text nests deeper than Limit; else it holds more than Limit values.
	Depth bool
	Limit int
}

func (e *Error) Error() string {
	if e.Depth {
		return fmt.Sprintf("the JSON payload nests deeper than %d levels", e.Limit)
	}
	return fmt.Sprintf("the JSON payload holds more than %d values", e.Limit)
}

// Check reports whether data, read as JSON, nests at most maxDepth arrays and objects deep and holds at most
// maxValues values (object keys count as values: a parser allocates them too). A limit of zero or less is not
// checked. Check does not validate the text: invalid JSON within the bounds returns nil, and is then no
// payload a parser accepts. It allocates nothing unless it returns an *Error.
func Check(data []byte, maxDepth, maxValues int) error {
	depth, values := 0, 0
	expect := true // a value may start here: at the start, after [ { , or :
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r':
		case '[', '{':
			depth++
			values++
			expect = true
			if maxDepth > 0 && depth > maxDepth {
				return &Error{Depth: true, Limit: maxDepth}
			}
		case ']', '}':
			depth--
			expect = false
		case ',', ':':
			expect = true
		case '"':
			values++
			i = stringEnd(data, i+1)
			expect = false
		default:
			if expect {
				values++
				expect = false
			}
		}
		if maxValues > 0 && values > maxValues {
			return &Error{Limit: maxValues}
		}
	}
	return nil
}

// stringEnd returns the index of the quote that closes the string whose content starts at i, or len(data)-1 when
// it is not closed. A quote closes the string unless an odd run of backslashes precedes it: scanning from the
// string's start, each backslash takes the byte after it. bytes.IndexByte finds the quotes several bytes at a
// time; strings are most of a payload's bytes.
func stringEnd(data []byte, i int) int {
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return len(data) - 1
		}
		i += j
		run := 0
		for k := i - 1; k >= 0 && data[k] == '\\'; k-- {
			run++
		}
		if run%2 == 0 {
			return i
		}
		i++
	}
}
