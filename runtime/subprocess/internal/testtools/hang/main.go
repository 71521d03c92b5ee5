// Command hang is a oneshot exec tool that reads its request and never answers.
package main

import (
	"io"
	"os"
	"time"
)

func main() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Stderr.WriteString("hang: sleeping\n")
	time.Sleep(time.Hour)
}
