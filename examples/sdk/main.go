// Command sdk runs one tool loop with the real OpenAI Go SDK and one with the real Anthropic Go SDK, each against
// an httptest server that stands in for the API (through the SDK's base-URL option), so it runs offline.
//
// The host's glue is all in openai.go and anthropic.go: the library's functions become the SDK's tool
// definitions (Function.StrictSchema, Function.AnthropicStrictSchema), each tool call runs with
// Task.InvokeFunction, and its Result.Text goes back to the model. An error from InvokeFunction is not for the
// model: it is unrecoverable (SPEC §7.1), and the host ends the conversation (endConversation). The fake API checks what it receives and fails the program when the host
// sent something wrong.
//
//	cd examples/sdk && go run .
package main

import (
	"context"
	"fmt"
	"os"

	tool "github.com/commonagents-go/tool"
)

// manifest is a small tool whose actions run in-process (cel), so the example needs no other service.
const manifest = `kind: commonagents.info/v1beta2/tool
namespace: examples
name: text
description: Text helpers.
actions:
  - name: slugify
    description: Turns a title into a lower-case URL slug.
    parameters:
      properties:
        title: {type: string, description: The text to turn into a slug.}
        separator: {type: string, enum: ["-", "_"], default: "-"}
    execute:
      cel:
        expression: "input.title.trim().lowerAscii().split(' ').filter(w, w != '').join(input.separator)"
  - name: count_words
    description: Counts the words of a text.
    parameters:
      properties:
        text: {type: string}
    execute:
      cel:
        expression: "{'words': size(input.text.split(' ').filter(w, w != ''))}"
`

func main() {
	ctx := context.Background()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	t, err := tool.Load(ctx, []byte(manifest))
	if err != nil {
		return err
	}
	api := newFakeAPI()
	defer api.Close()
	for _, loop := range []struct {
		name string
		run  func(ctx context.Context, t *tool.Tool, baseURL string) (string, error)
	}{{"openai", openAILoop}, {"anthropic", anthropicLoop}} {
		answer, err := loop.run(ctx, t, api.URL)
		if err != nil {
			return fmt.Errorf("%s: %w", loop.name, err)
		}
		if err := api.err(); err != nil {
			return fmt.Errorf("%s: the API saw a mistake: %w", loop.name, err)
		}
		fmt.Printf("%s: %s\n", loop.name, answer)
	}
	return nil
}

// endConversation is what a host does with an error from InvokeFunction: an unrecoverable failure of the tool
// (ErrUnrecoverable; or ErrClosed, or the ctx's end). The library reports it and leaves the task open; the host
// ends the conversation: it tells the user why (here the caller prints the error) and closes the task (the
// loops' deferred task.Close). The model never sees it: there is nothing it could do about it.
func endConversation(err error) error {
	return fmt.Errorf("the tool cannot go on, so this conversation ends: %w", err)
}
