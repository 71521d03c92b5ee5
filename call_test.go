package tool

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The plain-string shortcut of encodeJSON must quote exactly as encoding/json does.
func TestEncodeJSONQuotesPlainStringsAsEncodingJSONDoes(t *testing.T) {
	for _, s := range []string{"", "hello", "a b~!", "tab\there", `quote"`, `back\slash`, "<html>&", "é", "\u2028", "\x7f"} {
		got, err := encodeJSON(s)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err != nil || enc.Encode(s) != nil || string(got) != strings.TrimSuffix(buf.String(), "\n") {
			t.Errorf("encodeJSON(%q) = %s, %v; encoding/json gives %s", s, got, err, buf.String())
		}
	}
}
