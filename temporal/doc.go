// Package temporaltool runs a tool's calls as Temporal activities and brings its events to workflows as signals,
// so that an agent loop written as a Temporal workflow survives the death of any worker.
//
// It lives in a module of its own (github.com/commonagents-go/tool/temporal), so that the library never depends
// on the Temporal SDK; its name is not temporal, which the SDK's users import in the same files.
//
// # Worker side
//
// A worker loads its tools over a shared Store (store/postgres) with tool.WithRouteIndex, serves them with a
// tool.Router in store mode (Router.Serve with a Hydrator), and registers Activities: every activity lends the
// task it names through Router.Task, so any worker runs any call of any conversation, and a dead worker loses
// nothing that was stored. SignalSink is the tasks' Sink: an activation becomes a signal to the workflow whose ID
// is the task ID.
//
// # Workflow side
//
// Start, Invoke, Functions, Touch and Close schedule the activities; NewEvents waits for activations or a durable
// timer, skipping an Activation.ID it has seen. They call only the workflow package: no function of the library,
// no clock, no I/O, so a workflow replays. Functions, catalog and event timeouts reach the workflow in StartTask's
// recorded result, so a manifest deployed mid-conversation does not change a replay.
//
// # At most once across retries
//
// The library sends a call of an action that is neither idempotent nor read-only at most once, within its
// process. Temporal re-runs an activity whose worker died, so Invoke adds the attempt rule: a retried attempt of
// such an action does not send unless the attempts before it are known not to have sent (their lend failed, as
// recorded in a heartbeat); it answers a recoverable outcome_unknown error with the hint to check the state.
//
// # Errors
//
// Every result of the library, IsError included, is an activity result: the model decides. A Retry-After on an
// idempotent call becomes the activity's NextRetryDelay. ErrUnrecoverable, and a task that is gone (ErrNotFound,
// ErrTaskExpired, ErrClosed), are non-retryable errors of the types ErrorUnrecoverable and ErrorTaskGone: Ended
// tells the workflow to end the conversation, and its deferred Close closes the task. A Store outage is an
// ordinary, retryable error.
package temporaltool
