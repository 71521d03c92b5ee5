// Package testprograms is every program the exec backend's tests run. The test binary is all of them (os/exec's
// helper-process pattern): TestMain links each program's name to the test binary, and a test binary run under
// one of those names runs that program, from this package's init, instead of the tests. So the programs are real
// processes with no build step of their own. Oneshot programs read {"args": {...}} from stdin and write one JSON
// object to stdout (rawout writes what it is given, to test how replies are read); rpcserver and rawserver speak
// line-delimited JSON-RPC 2.0.
package testprograms

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// testPrograms are the programs by the name the tests run them under.
var testPrograms = map[string]func(){
	"crash":     toolCrash,
	"echo":      toolEcho,
	"escape":    toolEscape,
	"fail":      toolFail,
	"hang":      toolHang,
	"hugeout":   toolHugeout,
	"pending":   toolPending,
	"printenv":  toolPrintenv,
	"rawout":    toolRawout,
	"rawserver": toolRawserver,
	"rpcserver": toolRpcserver,
	"spawnhang": toolSpawnhang,
}

// toolCrash (test program "crash") is a oneshot exec tool that dies by a signal after writing to stderr.
func toolCrash() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Stderr.WriteString("crash: giving up\n")
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// toolEcho (test program "echo") is a oneshot exec tool that returns its arguments: {"result": args}.
func toolEcho() {
	var req struct {
		Args any `json:"args"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		os.Stderr.WriteString("echo: bad request: " + err.Error() + "\n")
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"result": req.Args})
}

// toolEscape (test program "escape") starts a child in a session of its own (setsid: it leaves the process group) that holds its
// stdout and stderr and sleeps, then answers with the child's pid and cgroup v2 path and exits at once (as a
// oneshot) or, with the argument "server", does so for each JSON-RPC call and stays. With "child" it only sleeps.
func toolEscape() {
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
			fmt.Printf(`{"jsonrpc": "2.0", "id": %s, "result": %s}`+"\n", req.ID, escapeChild())
		}
	default:
		fmt.Printf(`{"result": %s}`+"\n", escapeChild())
	}
}

// escape starts the sleeping child in a new session and describes it.
func escapeChild() string {
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

// toolFail (test program "fail") is a oneshot exec tool that fails in the way args.mode names: json ({"error": args.message}),
// text (stdout not JSON), empty (no stdout), exit (stderr and exit status 3), exit_json ({"error"} and status 1),
// nokey (a JSON object without result, error or pending).
func toolFail() {
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

// toolHang (test program "hang") is a oneshot exec tool that reads its request and never answers.
func toolHang() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Stderr.WriteString("hang: sleeping\n")
	time.Sleep(time.Hour)
}

// toolHugeout (test program "hugeout") is a oneshot exec tool that answers {"result": "xxx..."} with args.bytes x's, on one line.
func toolHugeout() {
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

// toolPending (test program "pending") is a oneshot exec tool whose work awaits a human: {"pending": {"reason", "message"}}.
func toolPending() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"pending": map[string]any{
		"reason": "approval_required", "message": "waiting for a human to approve"}})
}

// toolPrintenv (test program "printenv") is a oneshot exec tool that returns its environment, working directory and arguments:
// {"result": {"env": {"NAME": "value", ...}, "cwd": "...", "argv": [...]}}.
func toolPrintenv() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	wd, _ := os.Getwd()
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"result": map[string]any{"env": env, "cwd": wd, "argv": os.Args[1:]}})
}

// toolRawout (test program "rawout") is a oneshot exec tool that writes args.stdout verbatim to stdout and args.stderr to stderr, then
// exits with status args.exit.
func toolRawout() {
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
	if req.Args.Exit != 0 { // status 0 by returning: the caller ends a program that succeeded
		os.Exit(req.Args.Exit)
	}
}

// toolRawserver (test program "rawserver") is a server-mode exec tool: for each request it writes args.reply with "$ID" replaced by the
// request's id; when args.pad_to > 0, "$PAD" is replaced by x's so that the line (without '\n') is pad_to bytes.
func toolRawserver() {
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

// toolRpcserver (test program "rpcserver") is a server-mode exec tool: it reads line-delimited JSON-RPC 2.0 "execute" requests and
// handles each in its own goroutine, so replies may come in any order. args.op chooses what a request does:
//
//	echo     result: args
//	sleep    waits args.ms, then result {"token": args.token}
//	pid      result {"pid": <its pid>}
//	error    a JSON-RPC error with message args.message
//	big      result: a string of args.bytes x's
//	stderr   writes args.text to stderr, then result "ok"
//	noise    writes a non-JSON line and a reply to an id nobody asked for, then result "ok"
//	barrier  held until args.n barrier requests arrived, then all answered in reverse order with {"token"}
//	crash    writes to stderr and exits with status 3 without replying
//
// At the end of stdin it exits, unless run with -ignore-eof, when it keeps running until killed. -token=... is
// accepted and ignored.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Args struct {
			Op      string `json:"op"`
			MS      int    `json:"ms"`
			Token   string `json:"token"`
			Message string `json:"message"`
			Bytes   int    `json:"bytes"`
			Text    string `json:"text"`
			N       int    `json:"n"`
		} `json:"args"`
	} `json:"params"`
	raw map[string]any
}

var (
	outMu   sync.Mutex
	barMu   sync.Mutex
	barrier []rpcRequest
)

func rpcWrite(v any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func rpcReply(id json.RawMessage, result any) {
	rpcWrite(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func rpcHandle(r rpcRequest) {
	a := r.Params.Args
	switch a.Op {
	case "echo":
		rpcReply(r.ID, r.raw)
	case "sleep":
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
		rpcReply(r.ID, map[string]any{"token": a.Token})
	case "pid":
		rpcReply(r.ID, map[string]any{"pid": os.Getpid()})
	case "error":
		rpcWrite(map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": map[string]any{"code": -32000, "message": a.Message}})
	case "big":
		rpcReply(r.ID, strings.Repeat("x", a.Bytes))
	case "stderr":
		os.Stderr.WriteString(a.Text)
		rpcReply(r.ID, "ok")
	case "noise":
		outMu.Lock()
		os.Stdout.WriteString("starting up, not json\n")
		outMu.Unlock()
		rpcWrite(map[string]any{"jsonrpc": "2.0", "id": 999999999, "result": "stray"})
		rpcReply(r.ID, "ok")
	case "barrier":
		barMu.Lock()
		barrier = append(barrier, r)
		held := barrier
		if len(held) >= a.N {
			barrier = nil
		}
		barMu.Unlock()
		if len(held) >= a.N {
			for i := len(held) - 1; i >= 0; i-- {
				rpcReply(held[i].ID, map[string]any{"token": held[i].Params.Args.Token})
			}
		}
	case "crash":
		os.Stderr.WriteString("rpcserver: crashing on purpose\n")
		os.Exit(3)
	default:
		rpcWrite(map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": map[string]any{"code": -32601, "message": "unknown op " + a.Op}})
	}
}

func toolRpcserver() {
	// A flag set of its own: the test binary's command line already holds the -test.* flags.
	flags := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	ignoreEOF := flags.Bool("ignore-eof", false, "keep running after stdin ends")
	_ = flags.String("token", "", "accepted and ignored (tests of templated arguments)")
	_ = flags.Parse(os.Args[1:])
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var r rpcRequest
			if json.Unmarshal(line, &r) == nil {
				var whole struct {
					Params struct {
						Args map[string]any `json:"args"`
					} `json:"params"`
				}
				_ = json.Unmarshal(line, &whole)
				r.raw = whole.Params.Args
				go rpcHandle(r)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			os.Exit(1)
		}
	}
	if *ignoreEOF {
		time.Sleep(time.Hour)
	}
}

// toolSpawnhang (test program "spawnhang") is a oneshot exec tool that starts a child of its own (in its process group, holding its
// stdout), writes "PID CHILDPID" to the file args.pidfile and hangs. Run with the argument "child" it only sleeps.
func toolSpawnhang() {
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

// init runs the program the process is named for and ends the process; under any other name it does nothing.
//
// Here rather than in TestMain: a package is initialized once its imports are, in import-path order (the Go
// spec), so this runs before most of what the tests link is initialized (the root package, cel-go, kin-openapi,
// jsonschema/v6, whose init alone compiles five meta-schemas, about 45ms). Measured on 2 cores at a load average
// of 7, a program's start took 40ms of CPU this way and 63ms from TestMain (a separately built program: 22ms); under
// -race, 100ms and 180ms. The tests start about 70 programs.
func init() {
	program, ok := testPrograms[filepath.Base(os.Args[0])]
	if !ok {
		return
	}
	program()
	// Not os.Exit(0): under -race that runs the race detector's finalizer, which sleeps a second (GORACE
	// atexit_sleep_ms) when goroutines remain, and the backend passes no GORACE to its programs. A race in a
	// program is still reported on its stderr when it happens.
	syscall.Exit(0)
}

// Names returns the names of the programs, sorted.
func Names() []string {
	names := make([]string, 0, len(testPrograms))
	for name := range testPrograms {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
