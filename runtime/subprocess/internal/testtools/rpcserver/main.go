// Command rpcserver is a server-mode exec tool: it reads line-delimited JSON-RPC 2.0 "execute" requests and
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
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

type request struct {
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
	barrier []request
)

func write(v any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func reply(id json.RawMessage, result any) {
	write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func handle(r request) {
	a := r.Params.Args
	switch a.Op {
	case "echo":
		reply(r.ID, r.raw)
	case "sleep":
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
		reply(r.ID, map[string]any{"token": a.Token})
	case "pid":
		reply(r.ID, map[string]any{"pid": os.Getpid()})
	case "error":
		write(map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": map[string]any{"code": -32000, "message": a.Message}})
	case "big":
		reply(r.ID, strings.Repeat("x", a.Bytes))
	case "stderr":
		os.Stderr.WriteString(a.Text)
		reply(r.ID, "ok")
	case "noise":
		outMu.Lock()
		os.Stdout.WriteString("starting up, not json\n")
		outMu.Unlock()
		write(map[string]any{"jsonrpc": "2.0", "id": 999999999, "result": "stray"})
		reply(r.ID, "ok")
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
				reply(held[i].ID, map[string]any{"token": held[i].Params.Args.Token})
			}
		}
	case "crash":
		os.Stderr.WriteString("rpcserver: crashing on purpose\n")
		os.Exit(3)
	default:
		write(map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": map[string]any{"code": -32601, "message": "unknown op " + a.Op}})
	}
}

func main() {
	ignoreEOF := flag.Bool("ignore-eof", false, "keep running after stdin ends")
	_ = flag.String("token", "", "accepted and ignored (tests of templated arguments)")
	flag.Parse()
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var r request
			if json.Unmarshal(line, &r) == nil {
				var whole struct {
					Params struct {
						Args map[string]any `json:"args"`
					} `json:"params"`
				}
				_ = json.Unmarshal(line, &whole)
				r.raw = whole.Params.Args
				go handle(r)
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
