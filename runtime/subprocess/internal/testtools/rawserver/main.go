// Command rawserver is a server-mode exec tool: for each request it writes args.reply with "$ID" replaced by the
// request's id; when args.pad_to > 0, "$PAD" is replaced by x's so that the line (without '\n') is pad_to bytes.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
)

func main() {
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Args struct {
					Reply string `json:"reply"`
					PadTo int    `json:"pad_to"`
				} `json:"args"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		out := strings.ReplaceAll(r.Params.Args.Reply, "$ID", string(r.ID))
		if r.Params.Args.PadTo > 0 {
			n := r.Params.Args.PadTo - (len(out) - len("$PAD"))
			out = strings.Replace(out, "$PAD", strings.Repeat("x", max(n, 0)), 1)
		}
		os.Stdout.WriteString(out + "\n")
	}
}
