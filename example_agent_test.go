package tool_test

import (
	"context"
	"fmt"

	"github.com/commonagents-go/tool"
)

// fakeModel stands in for an LLM SDK: it answers the offered functions with tool calls, then with text once it
// has read their results.
type fakeModel struct {
	turn    int
	results []string
}

type toolCall struct{ ID, Name, Arguments string }

// Next returns the model's tool calls for this turn, or its final answer.
func (m *fakeModel) Next(offered []tool.Function) (calls []toolCall, answer string) {
	m.turn++
	if m.turn == 1 {
		return []toolCall{
			{"call_1", offered[0].Name, `{"title": "Hello Agent World"}`},
			{"call_2", "text_translate", `{"text": "hello"}`}, // a made-up name: the model hears back
		}, ""
	}
	return nil, "done after reading " + fmt.Sprint(len(m.results)) + " results"
}

// A complete agent loop: the task's functions go to the model, each of its calls runs with InvokeFunction, and
// every result, errors it made included, goes back to it as text. An error from InvokeFunction would be
// unrecoverable: the host would tell the user and end the conversation (the deferred Close ends the task).
func Example() {
	ctx := context.Background()
	t, err := tool.Load(ctx, []byte(`kind: commonagents.info/v1beta2/tool
namespace: examples
name: text
description: Text helpers.
actions:
  - name: slugify
    description: Turns a title into a lower-case URL slug.
    parameters:
      required: [title]
      properties:
        title: {type: string}
    execute:
      cel:
        expression: "input.title.lowerAscii().split(' ').join('-')"
  - name: count_words
    description: Counts the words of a text.
    parameters:
      properties:
        text: {type: string}
    execute:
      cel:
        expression: "size(input.text.split(' '))"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer task.Close(ctx)

	model := &fakeModel{}
	for {
		calls, answer := model.Next(task.Functions())
		if len(calls) == 0 {
			fmt.Println("model:", answer)
			return
		}
		for _, call := range calls {
			res, err := task.InvokeFunction(tool.ContextWithCallID(ctx, call.ID), call.Name, []byte(call.Arguments))
			if err != nil {
				fmt.Println("the tool cannot go on; ending the conversation:", err)
				return
			}
			model.results = append(model.results, res.Text())
			fmt.Printf("%s %s: %s\n", call.ID, call.Name, res.Text())
		}
	}
	// Output:
	// call_1 text_slugify: hello-agent-world
	// call_2 text_translate: {"error":{"kind":"unknown_function","message":"there is no function \"text_translate\"; the functions are text_slugify, text_count_words","hint":{"functions":["text_slugify","text_count_words"],"message":"call one of the listed functions by its exact name"}}}
	// model: done after reading 2 results
}
