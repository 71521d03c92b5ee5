// Command escape starts a child in a session of its own (setsid: it leaves the process group) that holds its
// stdout and stderr and sleeps, then answers with the child's pid and cgroup v2 path and exits at once (as a
// oneshot) or, with the argument "server", does so for each JSON-RPC call and stays. With "child" it only sleeps.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "child":
		time.Sleep(time.Hour)
	case "server":
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(in.Bytes(), &req) != nil {
				continue
			}
			fmt.Printf(`{"jsonrpc": "2.0", "id": %s, "result": %s}`+"\n", req.ID, escape())
		}
	default:
		fmt.Printf(`{"result": %s}`+"\n", escape())
	}
}

// escape starts the sleeping child in a new session and describes it.
func escape() string {
	cmd := exec.Command(os.Args[0], "child")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "escape:", err)
		os.Exit(1)
	}
	pid := cmd.Process.Pid
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	cgroup := ""
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			cgroup = p
		}
	}
	out, _ := json.Marshal(map[string]any{"child": pid, "cgroup": cgroup})
	return string(out)
}
