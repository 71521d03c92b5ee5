package jsonvalue

import (
	"encoding/binary"
	"math/bits"

	"github.com/commonagents-go/tool/internal/jsonlimit"
)

// The one pass that decides what is JSON. It accepts exactly what encoding/json's json.Valid accepts (RFC 8259's
// grammar, at most maxDepth arrays and objects deep; invalid UTF-8 inside strings is allowed, as encoding/json
// then replaces it), and learns on the way whether ojg can read the text exactly as encoding/json does. It is
// several times faster than json.Valid, which matters on the webhook path: every payload passes here before ojg
// builds it.

// maxDepth is encoding/json's nesting limit: a text nested deeper is not valid to it.
const maxDepth = 10000

// shape is what scan learns about a valid text, besides its validity.
type shape struct {
	surrogate bool // a \uD… escape, maybe half of a UTF-16 surrogate pair
	nonASCII  bool // a byte ≥ 0x80 (only strings may hold one), maybe invalid UTF-8
	bigNumber bool // a number with an exponent or more than 15 digits: beyond int64 or float64, maybe
	zeroExp   bool // a number with a zero exponent (1e0, 2E-00)
}

// plain marks the string bytes that need no attention: printable ASCII but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scan reports whether data is one JSON text, surrounding white space allowed, and its shape if so.
func scan(data []byte) (s shape, ok bool) {
	s, ok, _ = scanWithin(data, bounds{})
	return s, ok
}

// bounds are the shape limits of DecodeWithin; a bound of zero or less is not checked.
type bounds struct{ depth, values int }

// countKey counts the member name that starts at i, if one does (else the text is not JSON, for key to tell), and
// says whether it goes over the bound of values.
func (b bounds) countKey(data []byte, i int, values *int) *jsonlimit.Error {
	if i >= len(data) || data[i] != '"' {
		return nil
	}
	if *values++; b.values > 0 && *values > b.values {
		return &jsonlimit.Error{Limit: b.values}
	}
	return nil
}

// scanWithin is scan that also counts, as jsonlimit.Check does, how deep data nests and how many values it holds
// (object keys included), and stops with over set at the first bound it goes over.
func scanWithin(data []byte, b bounds) (s shape, ok bool, over *jsonlimit.Error) {
	var objects [maxDepth/64 + 1]uint64 // bit d set: the container at depth d is an object
	depth, values := 0, 0
	i := 0
	for {
		// A value starts here.
		i = skipSpace(data, i)
		if i >= len(data) {
			return s, false, nil
		}
		c := data[i]
		switch c {
		case ']', '}', ',', ':': // no value starts: not JSON (the switch below says so), and not counted
		case '{', '[':
			if depth++; depth > maxDepth {
				return s, false, nil
			}
			if values++; b.depth > 0 && depth > b.depth {
				return s, false, &jsonlimit.Error{Depth: true, Limit: b.depth}
			}
		default:
			values++
		}
		if b.values > 0 && values > b.values {
			return s, false, &jsonlimit.Error{Limit: b.values}
		}
		switch c {
		case '{', '[':
			bit := uint64(1) << (depth % 64)
			objects[depth/64] &^= bit
			closer := byte(']')
			if c == '{' {
				objects[depth/64] |= bit
				closer = '}'
			}
			if i = skipSpace(data, i+1); i < len(data) && data[i] == closer {
				depth--
				i++
				break
			}
			if c == '{' {
				if over := b.countKey(data, i, &values); over != nil {
					return s, false, over
				}
				if i, ok = s.key(data, i); !ok {
					return s, false, nil
				}
			}
			continue
		case '"':
			if i, ok = s.str(data, i); !ok {
				return s, false, nil
			}
		case 't':
			if i, ok = literal(data, i, "true"); !ok {
				return s, false, nil
			}
		case 'f':
			if i, ok = literal(data, i, "false"); !ok {
				return s, false, nil
			}
		case 'n':
			if i, ok = literal(data, i, "null"); !ok {
				return s, false, nil
			}
		default:
			if i, ok = s.number(data, i); !ok {
				return s, false, nil
			}
		}
		// A value ended: close containers until the next member or element, or the end.
		for {
			i = skipSpace(data, i)
			if depth == 0 {
				return s, i == len(data), nil
			}
			if i >= len(data) {
				return s, false, nil
			}
			object := objects[depth/64]&(uint64(1)<<(depth%64)) != 0
			c := data[i]
			if c == ',' {
				i++
				if object {
					i = skipSpace(data, i)
					if over := b.countKey(data, i, &values); over != nil {
						return s, false, over
					}
					if i, ok = s.key(data, i); !ok {
						return s, false, nil
					}
				}
				break
			}
			if object && c != '}' || !object && c != ']' {
				return s, false, nil
			}
			depth--
			i++
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// key reads a member's name and its colon at i, returning where its value may start.
func (s *shape) key(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	i, ok := s.str(data, i)
	if !ok {
		return i, false
	}
	if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
		return i, false
	}
	return i + 1, true
}

// str reads the string whose opening quote is at i, returning the index after its closing quote.
func (s *shape) str(data []byte, i int) (int, bool) {
	for i++; ; i++ {
		if i = plainEnd(data, i); i >= len(data) {
			return i, false
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i++; i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) || !hex(data[i+1]) || !hex(data[i+2]) || !hex(data[i+3]) || !hex(data[i+4]) {
					return i, false
				}
				s.surrogate = s.surrogate || data[i+1] == 'd' || data[i+1] == 'D'
				i += 4
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default: // ≥ 0x80
			s.nonASCII = true
		}
	}
}

// plainEnd returns the index of the first byte from i on that is not plain (or len(data)), testing 8 bytes at a
// time: strings are most of a payload's bytes.
func plainEnd(data []byte, i int) int {
	for ; i+8 <= len(data); i += 8 {
		if m := special8(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(data) && plain[data[i]] {
		i++
	}
	return i
}

// special8 sets the high bit of each byte of x, read little-endian, that is a quote, a backslash, a control
// character or ≥ 0x80. It may also set the high bit of a byte above one that is set (a borrow), never below: the
// lowest bit set marks the first byte that is not plain.
func special8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (x | zero(x^(ones*'"')) | zero(x^(ones*'\\')) | (x-ones*0x20)&^x) & highs
}

func hex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func literal(data []byte, i int, word string) (int, bool) {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// number reads the number at i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *shape) number(data []byte, i int) (int, bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	start := i
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return i, false
	}
	n := i - start
	if i < len(data) && data[i] == '.' {
		end := digits(data, i+1)
		if end == i+1 {
			return end, false
		}
		n += end - i - 1
		i = end
	}
	if n > 15 {
		s.bigNumber = true
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		if i++; i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		end := digits(data, i)
		if end == i {
			return end, false
		}
		s.bigNumber = true
		zero := true
		for _, c := range data[i:end] {
			zero = zero && c == '0'
		}
		s.zeroExp = s.zeroExp || zero
		i = end
	}
	return i, true
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}
