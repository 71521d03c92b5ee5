package main

import (
	"context"
	"fmt"

	tool "github.com/commonagents-go/tool"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAILoop is a complete Chat Completions tool loop: the task's functions as strict function tools, every tool
// call run by the task, its text sent back, until the model answers.
func openAILoop(ctx context.Context, t *tool.Tool, baseURL string) (string, error) {
	client := openai.NewClient(option.WithBaseURL(baseURL+"/openai/v1/"), option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0))
	task, err := t.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		return "", err
	}
	defer task.Close(ctx)

	var tools []openai.ChatCompletionToolUnionParam
	for _, f := range task.Functions() {
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        f.Name,
			Description: openai.String(f.Description),
			Parameters:  f.StrictSchema(), // a null for an optional parameter is then treated as absent
			Strict:      openai.Bool(true),
		}))
	}
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT5_2,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:    tools,
	}
	for range 5 {
		completion, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			res, err := task.InvokeFunction(tool.ContextWithCallID(ctx, call.ID), call.Function.Name, []byte(call.Function.Arguments))
			if err != nil { // unrecoverable (or ErrClosed, ctx's end): the host ends the conversation
				return "", endConversation(err)
			}
			params.Messages = append(params.Messages, openai.ToolMessage(res.Text(), call.ID))
		}
	}
	return "", fmt.Errorf("no answer after 5 turns")
}
