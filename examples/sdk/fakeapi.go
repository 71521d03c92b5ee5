package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
)

// prompt is the user's request in both loops.
const prompt = "Make a URL slug for “Hello Agent World”, and count the words of “one two three”."

// fakeAPI stands in for the OpenAI and Anthropic APIs: a scripted model that calls tools (one of them a function
// that does not exist, one with missing arguments) and then answers with what the tools returned. It records
// every mistake it sees in the requests.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	errs []error
}

func newFakeAPI() *fakeAPI {
	api := &fakeAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /openai/v1/chat/completions", api.openAI)
	mux.HandleFunc("POST /anthropic/v1/messages", api.anthropic)
	api.Server = httptest.NewServer(mux)
	return api
}

func (api *fakeAPI) fail(format string, args ...any) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.errs = append(api.errs, fmt.Errorf(format, args...))
}

// err returns the mistakes seen so far and forgets them.
func (api *fakeAPI) err() error {
	api.mu.Lock()
	defer api.mu.Unlock()
	err := errors.Join(api.errs...)
	api.errs = nil
	return err
}

// request decodes a request body loosely, as JSON values.
type request map[string]any

func (r request) list(key string) []map[string]any {
	var out []map[string]any
	items, _ := r[key].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func decode(w http.ResponseWriter, req *http.Request) (request, bool) {
	var r request
	if err := json.NewDecoder(req.Body).Decode(&r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return r, true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (api *fakeAPI) openAI(w http.ResponseWriter, req *http.Request) {
	r, ok := decode(w, req)
	if !ok {
		return
	}
	for _, t := range r.list("tools") {
		fn, _ := t["function"].(map[string]any)
		params, _ := fn["parameters"].(map[string]any)
		if fn["strict"] != true || params["additionalProperties"] != false {
			api.fail("openai: tool %v is not strict: %v", fn["name"], fn)
		}
		if fn["name"] == "text_slugify" && !reflect.DeepEqual(params["required"], []any{"separator", "title"}) {
			api.fail("openai: strict slugify must require every property, got %v", params["required"])
		}
	}
	messages := r.list("messages")
	last := messages[len(messages)-1]
	if last["role"] != "tool" {
		reply(w, chatCompletion(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			toolCall("call_1", "text_slugify", `{"title":"Hello Agent World","separator":null}`),
			toolCall("call_2", "text_translate", `{"text":"hi"}`), // a function that does not exist
		}}, "tool_calls"))
		return
	}
	results := map[string]string{}
	for _, m := range messages {
		if m["role"] == "tool" {
			content, _ := m["content"].(string)
			results[m["tool_call_id"].(string)] = content
		}
	}
	if results["call_1"] != "hello-agent-world" {
		api.fail("openai: slugify returned %q, want the plain text hello-agent-world", results["call_1"])
	}
	var unknown struct {
		Error struct {
			Kind string
			Hint struct{ Functions []string }
		}
	}
	if err := json.Unmarshal([]byte(results["call_2"]), &unknown); err != nil || unknown.Error.Kind != "unknown_function" ||
		!reflect.DeepEqual(unknown.Error.Hint.Functions, []string{"text_slugify", "text_count_words"}) {
		api.fail("openai: the unknown function's result should list the functions, got %s", results["call_2"])
	}
	reply(w, chatCompletion(map[string]any{"role": "assistant",
		"content": "The slug is " + results["call_1"] + "; there is no translate function."}, "stop"))
}

func toolCall(id, name, args string) map[string]any {
	return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
}

func chatCompletion(message map[string]any, finish string) map[string]any {
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-5.2",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": message}}}
}

func (api *fakeAPI) anthropic(w http.ResponseWriter, req *http.Request) {
	r, ok := decode(w, req)
	if !ok {
		return
	}
	for _, t := range r.list("tools") {
		schema, _ := t["input_schema"].(map[string]any)
		if schema["type"] != "object" || schema["properties"] == nil {
			api.fail("anthropic: tool %v has input_schema %v", t["name"], schema)
		}
		if t["name"] == "text_slugify" && !reflect.DeepEqual(schema["required"], []any{"title"}) {
			api.fail("anthropic: slugify should require title only, got %v", schema["required"])
		}
		if t["strict"] != true || schema["additionalProperties"] != false {
			api.fail("anthropic: tool %v should be strict with a closed schema, got strict %v and %v", t["name"], t["strict"], schema)
		}
	}
	messages := r.list("messages")
	results := map[string]map[string]any{}
	for _, m := range messages {
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if b, ok := b.(map[string]any); ok && b["type"] == "tool_result" {
				results[b["tool_use_id"].(string)] = b
			}
		}
	}
	if len(results) == 0 {
		reply(w, anthropicMessage("tool_use",
			map[string]any{"type": "text", "text": "Let me use the tools."},
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "text_count_words",
				"input": map[string]any{"text": "one two three"}},
			map[string]any{"type": "tool_use", "id": "toolu_2", "name": "text_slugify", "input": map[string]any{}}))
		return
	}
	if got := resultText(results["toolu_1"]); got != `{"words":3}` || results["toolu_1"]["is_error"] == true {
		api.fail("anthropic: count_words returned %q, want {\"words\":3}", got)
	}
	var missing struct{ Error struct{ Kind string } }
	if err := json.Unmarshal([]byte(resultText(results["toolu_2"])), &missing); err != nil ||
		missing.Error.Kind != "missing_fields" || results["toolu_2"]["is_error"] != true {
		api.fail("anthropic: a call without its title should be an is_error missing_fields result, got %v", results["toolu_2"])
	}
	reply(w, anthropicMessage("end_turn", map[string]any{"type": "text",
		"text": "“one two three” has 3 words; the slug needs a title."}))
}

// resultText returns a tool_result's content, sent as a string or as text blocks.
func resultText(b map[string]any) string {
	switch c := b["content"].(type) {
	case string:
		return c
	case []any:
		var s string
		for _, part := range c {
			if p, ok := part.(map[string]any); ok {
				s += fmt.Sprint(p["text"])
			}
		}
		return s
	}
	return ""
}

func anthropicMessage(stop string, content ...any) map[string]any {
	return map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 10, "output_tokens": 10}}
}
