// Command rawout is a oneshot exec tool that writes args.stdout verbatim to stdout and args.stderr to stderr, then
// exits with status args.exit.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	var req struct {
		Args struct {
			Stdout string `json:"stdout"`
			Stderr string `json:"stderr"`
			Exit   int    `json:"exit"`
		} `json:"args"`
	}
	_ = json.NewDecoder(os.Stdin).Decode(&req)
	os.Stderr.WriteString(req.Args.Stderr)
	os.Stdout.WriteString(req.Args.Stdout)
	os.Exit(req.Args.Exit)
}
