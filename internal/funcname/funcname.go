// Package funcname turns any text into a name an LLM function-calling API accepts: it matches
// ^[A-Za-z0-9_-]{1,64}$ (OpenAI's rule, also Anthropic's and Gemini's). One rule serves every backend: the root
// builds function names with it and the openapi backend names actions from operationIds with it.
//
// The rule, in order: every character outside [A-Za-z0-9_] becomes "_"; runs of "_" collapse into one; leading
// and trailing "_" are trimmed. A name longer than the limit keeps its first characters and ends with "_" and
// eight hex digits of the SHA-256 of the whole name, so it is stable (the same input gives the same name in every
// process and version of a document) and two long names that share a prefix stay apart.
package funcname

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLen is the longest function name LLM APIs accept (OpenAI refuses names over 64 characters).
const MaxLen = 64

// HashLen is the number of hex digits of the hash suffix Shorten and Suffix append.
const HashLen = 8

// Clean maps every character outside [A-Za-z0-9_] to "_", collapses runs of "_" and trims "_" at both ends. The
// result may be empty, start with a digit or be longer than MaxLen: Name and Shorten deal with those.
func Clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	pending := false // an "_" waits to be written before the next kept character
	for _, r := range s {
		if r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			if r == '_' {
				pending = b.Len() > 0
				continue
			}
			if pending {
				b.WriteByte('_')
				pending = false
			}
			b.WriteRune(r)
			continue
		}
		pending = b.Len() > 0
	}
	return b.String()
}

// Hash returns HashLen hex digits of the SHA-256 of s: a short stable tag.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:HashLen]
}

// Shorten returns name when it has at most max bytes, else its first max-HashLen-1 bytes, "_" and Hash(name).
// name must already be Clean (ASCII), so cutting it never splits a character.
func Shorten(name string, max int) string {
	if len(name) <= max {
		return name
	}
	head := strings.TrimRight(name[:max-HashLen-1], "_")
	return head + "_" + Hash(name)
}

// Suffix returns name with "_" and Hash(tag) appended, shortened to max bytes first so the whole stays within it:
// what breaks a tie between two items that clean to the same name.
func Suffix(name, tag string, max int) string {
	room := max - HashLen - 1
	if len(name) > room {
		name = strings.TrimRight(name[:room], "_")
	}
	return name + "_" + Hash(tag)
}

// Name returns Clean(s) shortened to MaxLen, or Clean(fallback) (shortened) when Clean(s) is empty or starts with
// a digit. It returns "" only when both are unusable.
func Name(s, fallback string) string {
	n := Clean(s)
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = Clean(fallback)
		if n == "" {
			return ""
		}
	}
	return Shorten(n, MaxLen)
}

// Join returns the cleaned parts joined with "_" (empty parts left out), shortened to MaxLen: a function name
// made of a capability key and an action name. When every part cleans to nothing it returns "f_" and the hash of
// the parts, so the result is never empty.
func Join(parts ...string) string {
	kept := make([]string, 0, len(parts))
	for _, p := range parts {
		if c := Clean(p); c != "" {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return "f_" + Hash(strings.Join(parts, "\x00"))
	}
	return Shorten(strings.Join(kept, "_"), MaxLen)
}
