// Command pending is a oneshot exec tool whose work awaits a human: {"pending": {"reason", "message"}}.
package main

import (
	"encoding/json"
	"io"
	"os"
)

func main() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"pending": map[string]any{
		"reason": "approval_required", "message": "waiting for a human to approve"}})
}
