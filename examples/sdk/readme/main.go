package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/commonagents-go/tool"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

func main() {
	if err := run(context.Background(), "Is issue 42 still open?"); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, question string) error {
	t, err := tool.LoadFile(ctx, "issues.yaml", tool.WithSettings(map[string]any{
		"token": os.Getenv("GITHUB_TOKEN"), "webhook_secret": os.Getenv("GITHUB_WEBHOOK_SECRET")}))
	if err != nil {
		return err // a *tool.ValidationError lists every problem of the manifest, with line and column
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{
		Bindings: map[string]any{"repo_id": 1296269}}}) // values the host fixes; the LLM never sees them
	if err != nil {
		return err
	}
	defer task.Close(ctx) // the task lives until Close: this tears down what it started

	var tools []openai.ChatCompletionToolUnionParam
	for _, f := range task.Functions() {
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: f.Name, Description: openai.String(f.Description), Parameters: f.StrictSchema(), Strict: openai.Bool(true)}))
	}
	client := openai.NewClient() // reads OPENAI_API_KEY
	params := openai.ChatCompletionNewParams{Model: openai.ChatModelGPT5_2, Tools: tools,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)}}
	for {
		completion, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return err
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			return nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			res, err := task.InvokeFunction(tool.ContextWithCallID(ctx, call.ID), call.Function.Name, []byte(call.Function.Arguments))
			if err != nil { // unrecoverable, tool.ErrClosed or ctx's error: this conversation cannot go on
				fmt.Println("Sorry, the issue tracker is not working right now. Please try again later.")
				return fmt.Errorf("conversation ended: %w", err) // and the deferred Close ends the task
			}
			// res.IsError is a mistake the model can fix (a made-up name, wrong arguments, a 404): send it back too
			params.Messages = append(params.Messages, openai.ToolMessage(res.Text(), call.ID))
		}
	}
}
