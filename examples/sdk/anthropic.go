package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	tool "github.com/commonagents-go/tool"
)

// anthropicLoop is a complete Messages API tool loop: the task's functions as tools (strict where the schema
// allows it), every tool_use run by the task and answered with a tool_result (is_error for the LLM's mistakes),
// until the model answers.
func anthropicLoop(ctx context.Context, t *tool.Tool, baseURL string) (string, error) {
	client := anthropic.NewClient(option.WithBaseURL(baseURL+"/anthropic/"), option.WithAPIKey("sk-ant-test"),
		option.WithMaxRetries(0))
	task, err := t.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		return "", err
	}
	defer task.Close(ctx)

	var tools []anthropic.ToolUnionParam
	for _, f := range task.Functions() {
		s, strict := f.AnthropicStrictSchema()
		if !strict {
			s = f.AnthropicSchema()
		}
		tools = append(tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        f.Name,
			Description: anthropic.String(f.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: s.Properties, Required: s.Required, ExtraFields: s.Extra},
			Strict:      anthropic.Bool(strict),
		}})
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet4_5,
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		Tools:     tools,
	}
	for range 5 {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			return "", err
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		var text strings.Builder
		for _, block := range msg.Content {
			switch b := block.AsAny().(type) {
			case anthropic.TextBlock:
				text.WriteString(b.Text)
			case anthropic.ToolUseBlock:
				res, err := task.InvokeFunction(tool.ContextWithCallID(ctx, b.ID), b.Name, b.Input)
				if err != nil { // unrecoverable (or ErrClosed, ctx's end): the host ends the conversation
					return "", endConversation(err)
				}
				results = append(results, anthropic.NewToolResultBlock(b.ID, res.Text(), res.IsError))
			}
		}
		if len(results) == 0 {
			return text.String(), nil
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	return "", fmt.Errorf("no answer after 5 turns")
}
