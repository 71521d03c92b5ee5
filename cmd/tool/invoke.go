package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/commonagents-go/tool"
)

var invokeCommand = command{
	name:     "invoke",
	synopsis: "FILE ACTION|FUNCTION [--args JSON] [--settings FILE] [--binding name=value ...] [--auth-env provider=VAR ...] [--timeout D]",
	summary:  "run one action of a manifest and print its result as JSON",
	detail: `Invoke loads the manifest, starts a task with the given bindings, runs one call
of ACTION (an action name, or the function name 'tool functions' prints) with
the JSON object --args as the LLM's arguments, prints the Result
as JSON and closes the task (tearing down what the call started).

The exit code is 0 when the call succeeded, 1 when it failed (a recoverable
error is still printed as a result; an unrecoverable one goes to stderr), 2 for
a command-line mistake. {auth.<provider>()} tokens are read from the environment
variables named by --auth-env.`,
	run: runInvoke,
}

func runInvoke(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	bindings := bindingFlag(fs)
	taskContext := contextFlag(fs)
	argsJSON := fs.String("args", "{}", "the call's arguments as a JSON `object`")
	settingsFile := fs.String("settings", "", "a YAML or JSON `FILE` mapping setting keys to values")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on the whole call, teardown included")
	tokens := envTokens{}
	fs.Func("auth-env", "read the token of {auth.`provider=VAR`()} from the environment variable VAR (repeatable)",
		func(s string) error {
			provider, env, ok := strings.Cut(s, "=")
			if !ok || provider == "" || env == "" {
				return errors.New("want provider=VAR")
			}
			tokens[provider] = env
			return nil
		})
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(fs, "want a manifest file and an action name, got %d arguments", len(pos))
	}
	file, action := pos[0], pos[1]
	var callArgs map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &callArgs); err != nil {
		return usageError(fs, "--args must be a JSON object: %v", err)
	}
	opts, err := settingsOption(*settingsFile)
	if err != nil {
		fmt.Fprintf(stderr, "tool invoke: %v\n", err)
		return exitProblem
	}
	if len(tokens) > 0 {
		opts = append(opts, tool.WithAuth(tokens))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	task, code := startTask(ctx, fs, stderr, "invoke", file, opts, bindings, *taskContext, action)
	if task == nil {
		return code
	}
	res, err := task.Invoke(ctx, actionNamed(task.Tool(), action), callArgs)
	if cerr := task.Close(ctx); cerr != nil {
		fmt.Fprintf(stderr, "tool invoke: %v\n", cerr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tool invoke: %v\n", err)
		return exitProblem
	}
	authHint(stderr, "invoke", res)
	out, _ := json.MarshalIndent(printable(res), "", "  ")
	fmt.Fprintf(stdout, "%s\n", out)
	if res.IsError {
		return exitProblem
	}
	return exitOK
}

// printable is the JSON shape of a Result on stdout.
func printable(r *tool.Result) any {
	return struct {
		CallID     string          `json:"call_id"`
		Action     string          `json:"action"`
		Function   string          `json:"function"`
		Output     json.RawMessage `json:"output"`
		IsError    bool            `json:"is_error,omitempty"`
		Error      *tool.ToolError `json:"error,omitempty"`
		Omitted    string          `json:"omitted,omitempty"`
		ServerData map[string]any  `json:"server_data,omitempty"`
		DurationMS int64           `json:"duration_ms"`
	}{r.CallID, r.Action, r.Function, r.OutputJSON, r.IsError, r.Error, r.OmittedReason, r.ServerData,
		r.Telemetry.Duration.Milliseconds()}
}

// envTokens is an AuthProvider reading each provider's token from an environment variable.
type envTokens map[string]string

func (e envTokens) Token(_ context.Context, provider string, _ tool.AuthRequest) (string, error) {
	name, ok := e[provider]
	if !ok {
		return "", fmt.Errorf("no --auth-env for provider %q", provider)
	}
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("environment variable %s is empty", name)
	}
	return v, nil
}

// actionNamed returns the action that name names: an action name as it is, else the action behind the function
// name `tool functions` prints (with the default capability key, the tool's name).
func actionNamed(t *tool.Tool, name string) string {
	functions := t.Functions(tool.Capability{})
	for _, f := range functions {
		if f.Action == name {
			return name
		}
	}
	for _, f := range functions {
		if f.Name == name {
			return f.Action
		}
	}
	return name
}

// startTask loads file and starts a task with the given bindings and context for a one-shot command (cmd names it
// in messages); the task's remote MCP servers are authorized with the local user's grants (tool auth). With only set (an action or function name), the task's capability includes just that action, so
// what the other actions need (a context key, say) is not asked for. It returns the task, or the exit code when it
// could not.
func startTask(ctx context.Context, fs *flag.FlagSet, stderr io.Writer, cmd, file string, opts []tool.Option,
	bindings, taskContext map[string]any, only string) (*tool.Task, int) {
	t, c, code := loadChecked(ctx, fs, stderr, file, opts, bindings, only)
	if t == nil {
		return nil, code
	}
	auth, err := localAuthorizer()
	if err != nil {
		fmt.Fprintf(stderr, "tool %s: the grants of 'tool auth': %v\n", cmd, err)
		return nil, exitProblem
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: c, Context: taskContext, MCPAuthorizer: auth})
	if err != nil {
		fmt.Fprintf(stderr, "tool %s: %v\n", cmd, contextProblems(err))
		return nil, exitProblem
	}
	return task, 0
}

// loadChecked loads file and checks the capability the bindings (and only, an action name or "") make; nil and
// the exit code after a problem, which it reported.
func loadChecked(ctx context.Context, fs *flag.FlagSet, stderr io.Writer, file string, opts []tool.Option,
	bindings map[string]any, only string) (*tool.Tool, tool.Capability, int) {
	t, err := tool.LoadFile(ctx, file, opts...)
	if err != nil {
		reportLoadError(stderr, stderr, file, err)
		return nil, tool.Capability{}, exitProblem
	}
	c := tool.Capability{}
	if len(bindings) > 0 {
		c.Bindings = bindings
	}
	if msg := checkCapability(t, c); msg != "" {
		return nil, c, usageError(fs, "%s", msg)
	}
	if only != "" {
		c.Include = []string{actionNamed(t, only)}
	}
	return t, c, 0
}
