// Package facts is the catalogue of the lifecycle facts this library reports to a host's tool.Observer (SPEC §11):
// one constant per fact name, each with the keys of its tool.Fact.Data. A host matches on these constants rather
// than on strings; every package that reports a fact (the root, the backends, the receivers) takes its name from
// here, and a test checks that no fact is reported under a name this package does not list.
//
// Data never holds a secret value (the task masks what it knows of in every encoding) nor an argument value that
// was not redacted. Keys are present as listed unless marked optional. Facts of a task carry Fact.TaskID; facts of
// a call carry Fact.CallID too.
package facts

// Load: reported by Load, once per Tool, with no task.
const (
	// ActionSkipped: an item of a top-level block (an OpenAPI operation, an MCP tool) did not become an action.
	// Data: kind (the backend), name, reason. Tool.Skipped lists the same items.
	ActionSkipped = "tool.action.skipped"
	// ActionsExpanded: a top-level block expanded into actions. Data: kind, expanded (actions added), skipped
	// (items in Tool.Skipped), unselected (items the block's own selection left out).
	ActionsExpanded = "tool.actions.expanded"
)

// Calls: reported by Invoke, InvokeFunction and Start, with the call's Fact.CallID.
const (
	// CatalogResolved: a task started; its catalog as the capability sees it. Data: catalog ([]tool.CatalogEntry).
	CatalogResolved = "tool.catalog.resolved"
	// ToolStarted: a call passed validation and is about to run. Data: action, arguments (redacted).
	ToolStarted = "tool.started"
	// ToolResult: a call ended with a result. Data: action, output_bytes, duration_ms.
	ToolResult = "tool.result"
	// ToolFailed: a call ended in error. Data: action, and either error (the *tool.ToolError, with output_bytes and
	// duration_ms) or error (its text) with unrecoverable: true.
	ToolFailed = "tool.failed"
	// ToolCancelled: a call stopped before its result. Data: action, reason ("task closed", "task interrupted",
	// or the context's error).
	ToolCancelled = "tool.cancelled"
	// ToolProgress: an MCP server reported progress for a running call. Data: call_id, action, progress; optional
	// total, message.
	ToolProgress = "tool.progress"
	// ToolLog: an MCP server sent a log message (notifications/message). Data: level, data; optional logger, and
	// call_id and action when one call of the server was running (the message names none).
	ToolLog = "tool.log"
	// ApprovalRequested: a call waits for the task's Approver. Data: action, function, arguments (redacted).
	ApprovalRequested = "tool.approval.requested"
	// ApprovalDecided: the Approver answered. Data: action, approved, by; optional reason, error.
	ApprovalDecided = "tool.approval.decided"
	// AllowListEvicted: a parameter's allow list reached Limits.AllowListValues and dropped its oldest values.
	// Data: parameter, count (values it holds).
	AllowListEvicted = "allowlist.evicted"
)

// Tasks: reported through a task's life.
const (
	// TaskRestored: RestoreTask rebuilt a stored task. Data: dropped_sealed (allow-list entries whose binding
	// changed), backends (resumed backends), last_activity_at (RFC 3339).
	TaskRestored = "task.restored"
	// TaskInterrupted: Task.Interrupt removed the subscriptions. Data: cancelled_calls.
	TaskInterrupted = "task.interrupted"
	// TaskResumed: Task.Resume restored what Interrupt removed. No Data.
	TaskResumed = "task.resumed"
	// TaskDetached: Task.Detach ended the task in this process only. No Data.
	TaskDetached = "task.detached"
	// TaskClosed: Task.Close ended the task everywhere. No Data.
	TaskClosed = "task.closed"
	// TaskExpired: the task reached TaskConfig.ExpiresAt and closes as by Task.Close. Data: expires_at.
	TaskExpired = "task.expired"
	// StoreFailed: a Store operation of the task failed. Data: operation, record (what it held), error.
	StoreFailed = "store.failed"
	// RuntimeTeardownFailed: a backend's teardown failed at Close. Data: backend, error.
	RuntimeTeardownFailed = "runtime.teardown_failed"
	// RuntimeStateOrphaned: a restored task's state names a backend no action uses any more. Data: backend,
	// detail.
	RuntimeStateOrphaned = "runtime.state_orphaned"
)

// Events: reported by Deliver, the Router and the background receivers. Facts of a background receiver carry
// event (the event's name) in their Data besides the keys listed.
const (
	// EventActivated: a payload activated an event and the Sink accepted it. Data: event, delivery_id.
	EventActivated = "event.activated"
	// EventDiscarded: a payload did not activate an event. Data: event, reason (a tool.Reason...), detail,
	// delivery_id.
	EventDiscarded = "event.discarded"
	// EventRefused: the Sink refused an activation (the sender is told to retry). Data: event, delivery_id, error.
	EventRefused = "event.refused"
	// SubscriptionCreated: a subscription's channel was created. Data: subscription_id, expires_at_ms.
	SubscriptionCreated = "subscription.created"
	// SubscriptionRenewed: a channel was replaced before it expired. Data: subscription_id, expires_at_ms,
	// previous.
	SubscriptionRenewed = "subscription.renewed"
	// SubscriptionFailed: a subscribe or renewal failed and is retried. Data: error, retry_in, and either reason
	// "store" or attempt and renewal.
	SubscriptionFailed = "subscription.failed"
	// SubscriptionRemoved: a channel was removed. Data: subscription_id, reason; optional detail, unconfirmed,
	// unknown_to_platform, status.
	SubscriptionRemoved = "subscription.removed"
	// SubscriptionUnsubscribeFailed: removing a channel failed. Data: subscription_id, reason, error.
	SubscriptionUnsubscribeFailed = "subscription.unsubscribe_failed"
	// SubscriptionAbandoned: a subscribe was still in flight when a stop's bound ended; the platform may hold the
	// channel until it expires. Data: subscription_id, reason, detail.
	SubscriptionAbandoned = "subscription.abandoned"
	// SubscriptionExpired: the event's timeout passed without activity; its payloads discard as expired until
	// Task.Resume. Data: event, timeout.
	SubscriptionExpired = "subscription.expired"
	// SubscriptionOrphaned: a restored task's state names an event the manifest no longer has. Data: event,
	// detail.
	SubscriptionOrphaned = "subscription.orphaned"
	// PollFetched: a poll ran. Data: items, fired, discarded, refused, baseline.
	PollFetched = "poll.fetched"
	// PollFailed: a poll could not run and is retried. Data: reason ("fetch" or "store"), error, retry_in, and
	// attempt (fetch) or operation (store).
	PollFailed = "poll.failed"
	// PollStopped: a poll ended with its task detached; its state stays. Data: reason.
	PollStopped = "poll.stopped"
)

// Routers: reported by a Router through the Observer of a Tool it serves, with no task.
const (
	// RouterEagerReplicas: a Router that holds its tasks in memory (eager mode) found other replicas serving
	// the same tool over the same Store; a webhook at one replica does not see allow-list values another added,
	// so it can be lost (several replicas need store mode). Data: replica (this one's id), replicas (the others'
	// ids), within (how recent their records are), detail.
	RouterEagerReplicas = "router.eager_replicas"
	// TaskHydrationFailed: a Router in store mode could not bring a stored task into memory for a webhook: its
	// stored state does not decode, or its configuration fails NewTask's checks. Fact.TaskID names it; the
	// webhook is answered 503. Data: error.
	TaskHydrationFailed = "task.hydration_failed"
	// TaskDetachFailed: a Router in store mode sent a task it had brought into memory out of it, and Task.Detach
	// failed (a Store write of its last activity, a backend's teardown), or, for a task whose ExpiresAt had
	// passed, the close that ends it failed. The Router does this in a goroutine of its own, never on a webhook's.
	// The task has left memory either way; the Store holds what it last wrote. Fact.TaskID names it. Data: error;
	// reason ("evicted": the cache's bounds, "replaced": Router.Add pinned another copy, "router_closed":
	// Router.Close); expired (bool: the task was closed, not detached).
	TaskDetachFailed = "task.detach_failed"
)

// Backends: reported by the backends of a task's calls.
const (
	// SessionCreated: stateful_session created a session. Data: session, status, keys (the session values' names).
	SessionCreated = "session.created"
	// SessionDestroyed: a session was destroyed. Data: session, status.
	SessionDestroyed = "session.destroyed"
	// SessionDestroyFailed: destroying a session failed. Data: session, error; optional status, recorded.
	SessionDestroyFailed = "session.destroy_failed"
	// JobCreated: kubernetes_job created a Job. Data: namespace, job, call_id.
	JobCreated = "job.created"
	// JobDeleted: a Job was deleted. Data: namespace, job.
	JobDeleted = "job.deleted"
	// JobDeleteFailed: deleting a Job failed (its TTL removes it later). Data: namespace, job, error.
	JobDeleteFailed = "job.delete_failed"
	// ExecProcessStarted: exec started a oneshot process. Data: action, pid, containment ("cgroup" or
	// "process_group").
	ExecProcessStarted = "exec.process.started"
	// ExecServerStarted: exec started a JSON-RPC server process. Data: action, pid, containment, restart.
	ExecServerStarted = "exec.server.started"
	// ExecServerExited: an exec server process exited. Data: action, pid, status, torn_down.
	ExecServerExited = "exec.server.exited"
	// MCPServerStarted: a stdio MCP server process started. Data: server, pid, containment.
	MCPServerStarted = "mcp.server.started"
	// MCPAuthorizationChallenged: a remote MCP server refused a request (401, or 403 insufficient_scope) and its
	// challenge went to the task's mcpauth.Authorizer, or would have past the call's bound. Data: server, call_id,
	// status, error (the challenge's error code), scopes (what the server asked for), outcome ("authorized",
	// "authorization_required", "access_denied", "limit" or "failed"). No URL, token or Authorizer message.
	MCPAuthorizationChallenged = "mcp.authorization.challenged"
	// MCPAuthorizationRequired: mcpauth.Client handed an authorization URL to the host for the task's end user.
	// Data: server, resource, issuer, scopes, step_up, subject (a digest of the end user's key), expires_at. No
	// URL, state or verifier.
	MCPAuthorizationRequired = "mcp.authorization.required"
	// MCPAuthorized: mcpauth.Client has a new token for the task's end user and a server. Data: server, resource,
	// issuer, scopes, expires_at, subject (digest), outcome ("completed": the user's authorization; "stored": a
	// grant another replica wrote; "refreshed"; "refresh_failed", with error, an OAuth error code).
	MCPAuthorized = "mcp.authorized"
	// MCPAuthorizationRefused: mcpauth.Client refused to authorize with what a server named. Data: server, url,
	// subject (digest), reason ("metadata": resource metadata for another resource, an issuer that does not
	// match, no PKCE S256; "outbound_guard": a metadata URL the outbound guard refuses), error.
	MCPAuthorizationRefused = "mcp.authorization.refused"
	// MCPToolsChanged: an MCP server said its list of tools changed (notifications/tools/list_changed). The Tool
	// is unchanged: a host that serves the list again calls Tool.Rediscover. Data: server.
	MCPToolsChanged = "mcp.tools.changed"
)

// All lists every fact name above, in the order of this file.
var All = []string{
	ActionSkipped, ActionsExpanded,
	CatalogResolved, ToolStarted, ToolResult, ToolFailed, ToolCancelled, ToolProgress, ToolLog, ApprovalRequested,
	ApprovalDecided, AllowListEvicted,
	TaskRestored, TaskInterrupted, TaskResumed, TaskDetached, TaskClosed, TaskExpired,
	StoreFailed, RuntimeTeardownFailed,
	RuntimeStateOrphaned,
	EventActivated, EventDiscarded, EventRefused, SubscriptionCreated, SubscriptionRenewed, SubscriptionFailed,
	SubscriptionRemoved, SubscriptionUnsubscribeFailed, SubscriptionAbandoned, SubscriptionExpired,
	SubscriptionOrphaned, PollFetched, PollFailed, PollStopped,
	RouterEagerReplicas, TaskHydrationFailed, TaskDetachFailed,
	SessionCreated, SessionDestroyed, SessionDestroyFailed, JobCreated, JobDeleted, JobDeleteFailed,
	ExecProcessStarted, ExecServerStarted, ExecServerExited, MCPServerStarted, MCPAuthorizationChallenged,
	MCPAuthorizationRequired, MCPAuthorized, MCPAuthorizationRefused,
	MCPToolsChanged,
}
