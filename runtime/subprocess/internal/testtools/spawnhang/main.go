// Command spawnhang is a oneshot exec tool that starts a child of its own (in its process group, holding its
// stdout), writes "PID CHILDPID" to the file args.pidfile and hangs. Run with the argument "child" it only sleeps.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		time.Sleep(time.Hour)
		return
	}
	var req struct {
		Args struct {
			Pidfile string `json:"pidfile"`
		} `json:"args"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		os.Exit(1)
	}
	child := exec.Command(os.Args[0], "child")
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "spawnhang:", err)
		os.Exit(1)
	}
	tmp := req.Args.Pidfile + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d", os.Getpid(), child.Process.Pid), 0o600); err != nil {
		os.Exit(1)
	}
	if err := os.Rename(tmp, req.Args.Pidfile); err != nil {
		os.Exit(1)
	}
	time.Sleep(time.Hour)
}
