package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/commonagents-go/tool"
)

var deliverCommand = command{
	name:     "deliver",
	synopsis: "FILE EVENT --body FILE [--header name:value ...] [--binding name=value ...] [--settings FILE]",
	summary:  "run one pushed payload through a manifest's events and print what they did with it",
	detail: `Deliver loads the manifest, starts a task with the given bindings and runs the
activation pipeline on one pushed payload: the exact bytes of the --body file,
with the --header lines its sender would send (X-Hub-Signature-256,
X-GitHub-Delivery, webhook-id, ...). EVENT names the event to try, or is "-"
to try every event. It prints the Delivery as JSON: each activation with its
message, parameters and payload, and each discarded event with its reason
(bad_signature, filter_false, empty_allow_list, filter_error, ...) and detail.

Filters see the allow list of a new task: the --binding values and nothing
else, so a filter over a parameter no binding fills discards the payload as
empty_allow_list. The exit code is 0 when the payload was delivered, even if
every event discarded it, 1 when it could not be (an unreadable manifest or
body, an unknown EVENT), 2 for a command-line mistake.`,
	run: runDeliver,
}

func runDeliver(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	bindings := bindingFlag(fs)
	taskContext := contextFlag(fs)
	bodyFile := fs.String("body", "", "the `FILE` holding the payload's body, sent as is (required)")
	settingsFile := fs.String("settings", "", "a YAML or JSON `FILE` mapping setting keys to values")
	headers := http.Header{}
	fs.Func("header", "send the request header `name:value` (repeatable)", func(s string) error {
		name, value, ok := strings.Cut(s, ":")
		if name = strings.TrimSpace(name); !ok || name == "" {
			return errors.New("want name:value")
		}
		headers.Add(name, strings.TrimSpace(value))
		return nil
	})
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(fs, "want a manifest file and an event name (or -), got %d arguments", len(pos))
	}
	if *bodyFile == "" {
		return usageError(fs, "--body is required")
	}
	file, event := pos[0], pos[1]
	if event == "-" {
		event = ""
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		fmt.Fprintf(stderr, "tool deliver: body: %v\n", err)
		return exitProblem
	}
	opts, err := settingsOption(*settingsFile)
	if err != nil {
		fmt.Fprintf(stderr, "tool deliver: %v\n", err)
		return exitProblem
	}
	task, code := startTask(ctx, fs, stderr, "deliver", file, opts, bindings, *taskContext, "")
	if task == nil {
		return code
	}
	d, err := task.Deliver(ctx, &tool.Inbound{Event: event, Headers: headers, Body: body})
	if cerr := task.Close(ctx); cerr != nil {
		fmt.Fprintf(stderr, "tool deliver: %v\n", cerr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tool deliver: %v\n", err)
		return exitProblem
	}
	out, err := json.MarshalIndent(printableDelivery(d), "", "  ")
	if err != nil { // a payload value JSON cannot encode
		fmt.Fprintf(stderr, "tool deliver: %v\n", err)
		return exitProblem
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return exitOK
}

// activationJSON is the JSON shape of an Activation on stdout; the task ID and receive time are left out, being
// different on every run.
type activationJSON struct {
	Event      string         `json:"event"`
	Message    string         `json:"message"`
	DeliveryID string         `json:"delivery_id,omitempty"`
	Parameters map[string]any `json:"parameters"`
	Payload    any            `json:"payload"`
}

// discardJSON is the JSON shape of a Discard on stdout.
type discardJSON struct {
	Event  string `json:"event"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// printableDelivery is the JSON shape of a Delivery on stdout, with empty lists rather than null.
func printableDelivery(d *tool.Delivery) any {
	out := struct {
		Activations []activationJSON `json:"activations"`
		Discarded   []discardJSON    `json:"discarded"`
	}{Activations: []activationJSON{}, Discarded: []discardJSON{}}
	for _, a := range d.Activations {
		out.Activations = append(out.Activations, activationJSON{a.Event, a.Message, a.DeliveryID, a.Parameters, a.Payload})
	}
	for _, x := range d.Discarded {
		out.Discarded = append(out.Discarded, discardJSON{x.Event, x.Reason, x.Detail})
	}
	return out
}
