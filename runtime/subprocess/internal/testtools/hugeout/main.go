// Command hugeout is a oneshot exec tool that answers {"result": "xxx..."} with args.bytes x's, on one line.
package main

import (
	"bufio"
	"encoding/json"
	"os"
)

func main() {
	var req struct {
		Args struct {
			Bytes int `json:"bytes"`
		} `json:"args"`
	}
	_ = json.NewDecoder(os.Stdin).Decode(&req)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	w.WriteString(`{"result":"`)
	for range req.Args.Bytes {
		w.WriteByte('x')
	}
	w.WriteString(`"}`)
	_ = w.Flush()
}
