// Command echo is a oneshot exec tool that returns its arguments: {"result": args}.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	var req struct {
		Args any `json:"args"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		os.Stderr.WriteString("echo: bad request: " + err.Error() + "\n")
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"result": req.Args})
}
