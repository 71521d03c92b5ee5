package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// TestMain runs the command itself when the test binary starts under the name tool (toolBinary's link), for the
// tests that need it as a process of its own. It ends with syscall.Exit: os.Exit under -race would sleep a second
// (GORACE atexit_sleep_ms) whenever goroutines remain, and the mcp backend passes no GORACE to its processes.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "tool" {
		syscall.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// okDir holds the project's valid manifests.
const okDir = "../../testdata/ok"

// runTool runs the command line in-process and returns its exit code and output.
func runTool(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeFile writes content to a new file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    []string // substrings stdout must contain
		notStdout []string
		stderr    []string
		emptyOut  bool
	}{
		{name: "no arguments", args: nil, code: exitUsage,
			stderr: []string{"usage: tool <command>", "validate", "functions", "schema"}, emptyOut: true},
		{name: "help", args: []string{"help"}, code: exitOK,
			stdout: []string{"usage: tool <command>", "  validate ", "  functions ", "  invoke ", "  deliver ",
				"  serve-mcp ", "  schema ", "  help "}},
		{name: "--help", args: []string{"--help"}, code: exitOK, stdout: []string{"usage: tool <command>"}},
		{name: "help of a command", args: []string{"help", "validate"}, code: exitOK,
			stdout: []string{"usage: tool validate [--settings FILE] FILE...", "-settings FILE"}},
		{name: "help of functions lists its flags", args: []string{"help", "functions"}, code: exitOK,
			stdout: []string{"-binding name=value", "-format shape", "-include list", "-key KEY", "-settings FILE"}},
		{name: "-h after a command", args: []string{"schema", "-h"}, code: exitOK,
			stderr: []string{"usage: tool schema"}},
		{name: "help of an unknown command", args: []string{"help", "frobnicate"}, code: exitUsage,
			stderr: []string{`unknown command "frobnicate"`}, emptyOut: true},
		{name: "help with two arguments", args: []string{"help", "validate", "schema"}, code: exitUsage,
			stderr: []string{"usage: tool help [command]"}},
		{name: "unknown command", args: []string{"serve-http", "x.yaml"}, code: exitUsage,
			stderr: []string{`unknown command "serve-http"`, "tool help"}, emptyOut: true},
		{name: "serve-mcp wants one file", args: []string{"serve-mcp"}, code: exitUsage,
			stderr: []string{"want one manifest file", "tool help serve-mcp"}, emptyOut: true},
		{name: "help of deliver lists its flags", args: []string{"help", "deliver"}, code: exitOK,
			stdout: []string{"usage: tool deliver FILE EVENT --body FILE", "-header name:value", "-binding name=value",
				"-body FILE", "-settings FILE"}},
		{name: "schema takes no arguments", args: []string{"schema", "extra"}, code: exitUsage,
			stderr: []string{"unexpected arguments", "tool help schema"}, emptyOut: true},
		{name: "unknown flag", args: []string{"validate", "--nope", "x.yaml"}, code: exitUsage,
			stderr: []string{"flag provided but not defined: -nope", "tool help validate"}, emptyOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runTool(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.notStdout {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout mentions %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tt.emptyOut && stdout != "" {
				t.Errorf("stdout is not empty:\n%s", stdout)
			}
		})
	}
}

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		positional []string
		values     []string // the -v values, in order
		code       int
		ok         bool
	}{
		{name: "flags first", args: []string{"-v", "a", "f1", "f2"}, positional: []string{"f1", "f2"}, values: []string{"a"}, ok: true},
		{name: "flags after", args: []string{"f1", "--v", "a", "f2", "-v=b"}, positional: []string{"f1", "f2"}, values: []string{"a", "b"}, ok: true},
		{name: "double dash ends flags", args: []string{"f1", "--", "-v", "f2"}, positional: []string{"f1", "-v", "f2"}, ok: true},
		{name: "nothing", args: nil, positional: []string{}, ok: true},
		{name: "missing value", args: []string{"f1", "-v"}, code: exitUsage},
		{name: "help", args: []string{"f1", "-h"}, code: exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var values []string
			fs.Func("v", "a value", func(s string) error { values = append(values, s); return nil })
			positional, code, ok := parse(fs, tt.args)
			if ok != tt.ok || code != tt.code {
				t.Fatalf("parse = (%q, %d, %t), want ok %t code %d", positional, code, ok, tt.ok, tt.code)
			}
			if !ok {
				return
			}
			if !reflect.DeepEqual(positional, tt.positional) {
				t.Errorf("positional = %q, want %q", positional, tt.positional)
			}
			if !reflect.DeepEqual(values, tt.values) {
				t.Errorf("values = %q, want %q", values, tt.values)
			}
		})
	}
}
