// Command tool checks Common Agent Specification tool manifests (kind commonagents.info/v1beta2/tool) from a
// shell, with the same loader hosts embed.
//
// Usage:
//
//	tool validate [--settings FILE] FILE...
//	tool functions FILE [--binding name=value ...] [--key KEY] [--include a,b] [--settings FILE] [--format openai|anthropic|mcp]
//	tool invoke FILE ACTION [--args JSON] [--settings FILE] [--binding name=value ...] [--auth-env provider=VAR ...] [--timeout D]
//	tool deliver FILE EVENT --body FILE [--header name:value ...] [--binding name=value ...] [--settings FILE]
//	tool serve-mcp FILE [--settings FILE] [--binding name=value ...]
//	tool schema
//	tool auth login|logout|status [SERVER_URL] [--client-id ID --issuer URL [--client-secret-env VAR]]
//	tool help [command]
//
// Validate loads each manifest and prints every problem on stdout as "FILE: LINE:COL: PATH: DETAIL" (the position
// is left out when unknown, the path when the problem is about the whole document), "FILE: ok" for a manifest
// without problems, and warnings on stderr as "FILE: warning: ...". --settings names a YAML or JSON mapping of
// setting keys to values, validated against each manifest's settings schema; without it settings are not checked.
//
// Functions prints the manifest's actions as a JSON array of LLM tool definitions: OpenAI's
// {"type":"function","function":{...}} (the default), Anthropic's {"name","description","input_schema"} or MCP's
// {"name","description","inputSchema"}. Each --binding hides a parameter from the schemas; its value is read as
// JSON when it is valid JSON (5, true, {"a":1}, "quoted") and as a string otherwise. --key sets the capability key
// function names start with, --include limits the actions shown.
//
// Invoke starts a task with the given bindings, runs one call of ACTION with the JSON object --args as the LLM's
// arguments and prints the Result as JSON; {auth.<provider>()} tokens come from the environment variables named by
// --auth-env.
//
// Deliver starts a task with the given bindings and runs one pushed payload through the activation pipeline: the
// exact bytes of the --body file with the --header lines its sender would send (X-Hub-Signature-256,
// X-GitHub-Delivery, ...), tried against EVENT or, for "-", every event. It prints the Delivery as JSON: activations
// with message, parameters and payload, discarded events with reason and detail. Filters see only the --binding
// values in the allow list. It exits 0 when the payload was delivered, even if every event discarded it.
//
// Serve-mcp starts one task with the given bindings and serves its functions as MCP tools over stdio until stdin
// ends or the process is interrupted, then closes the task. Each tools/call runs through Task.InvokeFunction; a
// recoverable failure is a result with isError set whose text is the error object with its hint (Result.Text), an
// unrecoverable one a JSON-RPC error.
//
// Schema prints the JSON Schema (draft-07) of the manifest format, for editors such as yaml-language-server:
//
//	tool schema > tool-manifest.schema.json
//	# yaml-language-server: $schema=./tool-manifest.schema.json
//
// Auth keeps the user's OAuth grants for remote MCP servers: login runs the authorization code flow with PKCE (the
// URL printed to stderr, the browser's return on a loopback address), status lists the grants, logout revokes and
// forgets one. They live in commonagents-tool/mcp-grants.json under the user's config directory (mode 0600), their
// secrets sealed with the key beside it; invoke, deliver and serve-mcp over stdio use them.
//
// Flags may come before or after the file names; "--" ends the flags. The exit code is 0 on success, 1 when a
// manifest has problems or a file cannot be read, and 2 when the command line is wrong.
package main
