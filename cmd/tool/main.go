package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/jobspec"
)

// The command checks kubernetes_job manifests as a host does, but runs no Jobs (it has no cluster client): it
// registers the checking half of the backend and links no client-go, so that serve-mcp costs what a library host
// costs. A kubernetes_job call fails with jobspec.ErrValidateOnly.
func init() { runtime.Default().MustRegister(jobspec.Validator{}) }

// Exit codes.
const (
	exitOK      = 0 // everything checked out
	exitProblem = 1 // a manifest has problems or a file could not be read
	exitUsage   = 2 // the command line is wrong
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand of tool.
type command struct {
	name     string
	synopsis string // the arguments, after "tool <name>"
	summary  string // one line for the command list
	detail   string // the paragraph of `tool help <name>`
	// run defines the command's flags on fs, parses args with it and does the work. Usage and parse errors go
	// to fs's output.
	run func(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order usage shows them (a function, so the list stays immutable).
func commands() []command {
	return []command{validateCommand, functionsCommand, invokeCommand, deliverCommand, serveMCPCommand, schemaCommand,
		authCommand}
}

// run executes the command line args (without the program name) and returns the exit code. ctx bounds the
// loading of manifests (an OpenAPI document fetch).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(ctx, rest, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, c.flags(stderr), rest, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "tool: unknown command %q\nRun 'tool help' for usage.\n", name)
	return exitUsage
}

// help prints the usage of tool, or of the command it names, to stdout.
func help(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		usage(stdout)
		return exitOK
	case 1:
		for _, c := range commands() {
			if c.name == args[0] {
				return c.run(ctx, c.flags(stdout), []string{"-h"}, stdout, stdout)
			}
		}
		fmt.Fprintf(stderr, "tool help: unknown command %q\nRun 'tool help' for usage.\n", args[0])
	default:
		fmt.Fprintln(stderr, "usage: tool help [command]")
	}
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, "tool checks Common Agent Specification tool manifests (kind commonagents.info/v1beta2/tool).\n\n")
	fmt.Fprint(w, "usage: tool <command> [arguments]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "show this text, or the usage of one command")
	fmt.Fprint(w, "\nRun 'tool help <command>' for a command's arguments and flags.\n")
}

// flags returns the flag set of c, writing to w. Its Usage prints the full usage of c.
func (c command) flags(w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: tool %s %s\n\n%s\n", c.name, c.synopsis, c.detail)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(w, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args with flags allowed before, between and after the positional arguments, which it returns.
// Everything after "--" is positional. When ok is false the caller exits with code: exitOK after -h (the usage
// is printed), exitUsage after a bad flag (the flag package has said why).
func parse(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // a mistake gets one line of help, not the whole usage
	defer func() { fs.Usage = usage }()
	positional = []string{}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, exitOK, false
			}
			helpHint(fs)
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), 0, true
		}
		if len(rest) == 0 {
			return positional, 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// usageError reports a command-line mistake the flag package cannot see.
func usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "tool %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	helpHint(fs)
	return exitUsage
}

func helpHint(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), "Run 'tool help %s' for usage.\n", fs.Name())
}
