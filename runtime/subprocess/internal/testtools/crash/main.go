// Command crash is a oneshot exec tool that dies by a signal after writing to stderr.
package main

import (
	"io"
	"os"
	"syscall"
)

func main() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Stderr.WriteString("crash: giving up\n")
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
