// Command fail is a oneshot exec tool that fails in the way args.mode names: json ({"error": args.message}),
// text (stdout not JSON), empty (no stdout), exit (stderr and exit status 3), exit_json ({"error"} and status 1),
// nokey (a JSON object without result, error or pending).
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var req struct {
		Args struct {
			Mode    string `json:"mode"`
			Message string `json:"message"`
		} `json:"args"`
	}
	_ = json.NewDecoder(os.Stdin).Decode(&req)
	switch req.Args.Mode {
	case "json":
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"error": req.Args.Message})
	case "text":
		fmt.Println("this is not json")
		fmt.Fprintln(os.Stderr, "fail: wrote text")
	case "empty":
		fmt.Fprintln(os.Stderr, "fail: wrote nothing")
	case "exit":
		fmt.Fprintln(os.Stderr, "fail: starting")
		fmt.Fprintln(os.Stderr, "fatal: disk on fire")
		os.Exit(3)
	case "exit_json":
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"error": "bad input: " + req.Args.Message})
		os.Exit(1)
	case "nokey":
		fmt.Println(`{"answer": 42}`)
	}
}
