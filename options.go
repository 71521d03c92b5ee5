package tool

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/events/webhook"
	"github.com/commonagents-go/tool/internal/contain"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/store"
)

// Option configures Load. Options are applied in order; one that returns an error makes Load fail.
type Option func(*options) error

type options struct {
	settings    map[string]any
	hasSettings bool
	httpClient  *http.Client
	ownClient   bool // httpClient is NewHTTPClient's, not the host's: the Tool closes its idle connections
	auth        AuthProvider
	store       Store
	clock       Clock
	replica     string       // WithReplicaID
	routeIndex  bool         // WithRouteIndex
	logger      *slog.Logger // the host's, unmasked: a task logs through Task.logger, which masks its secrets
	observer    Observer
	info        RuntimeInfo
	runtimes    *runtime.Registry
	receivers   *events.Registry
	limits      Limits
	baseDir     string
	discover    bool     // WithDiscovery
	refOrigins  []string // WithDocumentOrigins
	cgroup      *string  // WithCgroupParent; nil = detect
	// Webhook signatures (SPEC §9.2).
	webhookSecret []byte
	verifiers     []webhook.Verifier
}

// RuntimeInfo is what {runtime.*} resolves to (SPEC §4.2).
type RuntimeInfo struct {
	Version      string
	APIRoot      string
	DashboardURL string
}

// Limits are the host's bounds (SPEC §14 defaults, SPEC §11 host limits). A zero field keeps its default.
type Limits struct {
	CallTimeout          time.Duration // per call; default 30s
	ResponseBytes        int64         // default 10 MiB
	InboundBytes         int64         // default 1 MiB
	CELCost              uint64        // default 1,000,000
	AllowListValues      int           // per name; default 1,024
	FilterAssignments    int           // per delivery; default 4,096
	TeardownTimeout      time.Duration // default 10s
	MaxCalls             int           // per task; 0 = unlimited
	MaxConsecutiveErrors int           // per task; 0 = unlimited
	// ResultBytes is the result budget: an output whose JSON is larger is omitted from Result.Output and kept
	// in Result.ServerData["output"] (SPEC §8). 0 = no budget.
	ResultBytes int
	// ActionTimeouts bound the calls of named actions (SPEC §11), on top of the manifest's own timeouts; a call
	// past its bound is a recoverable timeout.
	ActionTimeouts map[string]time.Duration
	// DedupeWindow is how long a delivery id is remembered, so a replay is discarded as duplicate (SPEC §9.2);
	// default 24h.
	DedupeWindow time.Duration
	// ClaimTimeout is how long a replica's claim on a delivery id holds off the same delivery elsewhere: meanwhile
	// the other replicas answer the sender's retries 503 (in_flight), and past it the claimant is taken for dead
	// (SPEC §9.2, §13); default 5 minutes. Lower it only as far as every Sink accepts within it.
	ClaimTimeout time.Duration
	// MaxEventTimeout caps every event's effective timeout (SPEC §9.5); 0 = no host cap.
	MaxEventTimeout time.Duration
	// ChannelTTL is the life of a subscription's push channel (SPEC §9.3), capped by the event's effective
	// timeout; default 24h.
	ChannelTTL time.Duration
	// RenewAt is the fraction of ChannelTTL after which a channel is renewed, in (0, 1); default 0.8. Renewals
	// also move up to 5% of the TTL earlier, at random.
	RenewAt float64
	// PollInterval is the time between a poll's fetches when the manifest names no interval (SPEC §9.4);
	// default 60s.
	PollInterval time.Duration
	// InboundDepth and InboundValues bound the JSON of a pushed payload before it is parsed (SPEC §9.1): how
	// deep its arrays and objects nest (default 64) and how many values it holds, object keys included
	// (default 100,000). A payload over either is discarded as payload_too_complex, unparsed; the Router
	// answers 413.
	InboundDepth  int
	InboundValues int
	// CELBytes bounds what one CEL evaluation (a cel action, filter, detect, extraction or binding) builds and
	// yields, in bytes (default 16 MiB): the strings and bytes its calls return count their length, the
	// elements of lists and maps it builds 16 bytes each, and its result its size as JSON. CELCost counts
	// operations, not bytes. Going over is a recoverable result_too_large for a cel action and a filter_error
	// for a filter.
	CELBytes int64
	// MaxProcesses bounds the processes each task's backends have running at once: stdio MCP servers, exec
	// programs and exec servers. A call that would start one more fails with a recoverable unavailable error
	// naming the limit, and the task goes on. 0 means no bound. `tool serve-mcp` sets it (--max-processes).
	MaxProcesses int
	// DocumentBytes bounds each document Load reads (an OpenAPI document, or a file or URL its $refs name),
	// instead of the backend's default (32 MiB for openapi: a size measured to fit a host's memory budget, since
	// the manifest chooses the url). Raise it for documents such as Microsoft Graph's beta (47 MB).
	DocumentBytes int64
	// GitHubMaxAge refuses GitHub deliveries older than it, as bad_signature. GitHub's signature covers the body
	// only: the X-GitHub-Delivery id is not signed, so a captured delivery replayed with a fresh id passes the
	// signature and the dedupe window. The age is taken from the payload's own timestamps, which the signature
	// does cover (the newest updated_at, created_at, submitted_at, completed_at or published_at of its top-level
	// objects, or repository.pushed_at); a payload that states none is not refused. Pick it above GitHub's
	// delivery delays and your own redelivery habits: a delivery redelivered by hand from GitHub's settings page
	// keeps its payload, and so its age. 0 turns the check off (the default).
	GitHubMaxAge time.Duration
}

// DefaultLimits returns the SPEC §14 defaults.
func DefaultLimits() Limits {
	return Limits{
		CallTimeout:       runtime.DefaultCallTimeout,
		ResponseBytes:     10 << 20,
		InboundBytes:      1 << 20,
		InboundDepth:      64,
		InboundValues:     100_000,
		CELBytes:          celenv.DefaultSize,
		CELCost:           1_000_000,
		AllowListValues:   1024,
		FilterAssignments: 4096,
		TeardownTimeout:   runtime.DefaultTeardownTimeout,
		DedupeWindow:      24 * time.Hour,
		ClaimTimeout:      defaultClaimTimeout,
		ChannelTTL:        24 * time.Hour,
		RenewAt:           0.8,
		PollInterval:      time.Minute,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.CallTimeout > 0 {
		d.CallTimeout = l.CallTimeout
	}
	if l.ResponseBytes > 0 {
		d.ResponseBytes = l.ResponseBytes
	}
	if l.InboundBytes > 0 {
		d.InboundBytes = l.InboundBytes
	}
	if l.CELBytes > 0 {
		d.CELBytes = l.CELBytes
	}
	if l.InboundDepth > 0 {
		d.InboundDepth = l.InboundDepth
	}
	if l.InboundValues > 0 {
		d.InboundValues = l.InboundValues
	}
	if l.CELCost > 0 {
		d.CELCost = l.CELCost
	}
	if l.AllowListValues > 0 {
		d.AllowListValues = l.AllowListValues
	}
	if l.FilterAssignments > 0 {
		d.FilterAssignments = l.FilterAssignments
	}
	if l.TeardownTimeout > 0 {
		d.TeardownTimeout = l.TeardownTimeout
	}
	if l.DedupeWindow > 0 {
		d.DedupeWindow = l.DedupeWindow
	}
	if l.ClaimTimeout > 0 {
		d.ClaimTimeout = l.ClaimTimeout
	}
	if l.ChannelTTL > 0 {
		d.ChannelTTL = l.ChannelTTL
	}
	if l.RenewAt > 0 && l.RenewAt < 1 {
		d.RenewAt = l.RenewAt
	}
	if l.PollInterval > 0 {
		d.PollInterval = l.PollInterval
	}
	d.MaxEventTimeout = l.MaxEventTimeout
	d.MaxProcesses, d.DocumentBytes, d.GitHubMaxAge = l.MaxProcesses, l.DocumentBytes, l.GitHubMaxAge
	d.MaxCalls, d.MaxConsecutiveErrors, d.ResultBytes, d.ActionTimeouts = l.MaxCalls, l.MaxConsecutiveErrors, l.ResultBytes, l.ActionTimeouts
	return d
}

// WithSettings supplies the operator's settings (SPEC §3.2). Load validates them against the manifest's settings
// schema, naming each missing or invalid key, and back-fills defaults. Without this option settings are not
// checked at load, and a field that needs a missing one fails when used.
func WithSettings(settings map[string]any) Option {
	return func(o *options) error {
		o.settings = settings
		o.hasSettings = true
		return nil
	}
}

// WithHTTPClient sets the client used for every HTTP request the tool makes (default: NewHTTPClient(0), tuned
// for concurrent calls). The host keeps full control of its client: the Tool never changes or closes it.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("tool: WithHTTPClient: nil client")
		}
		o.httpClient = c
		return nil
	}
}

// WithDiscovery lets Load contact live servers to list the actions a top-level block offers (SPEC §7.6: an mcp
// block's tools/list, which starts the server). Default false. Reading an OpenAPI document needs no consent: it
// is always fetched at Load (SPEC §7.5).
func WithDiscovery(on bool) Option {
	return func(o *options) error { o.discover = on; return nil }
}

// WithDocumentOrigins lets the documents Load reads (OpenAPI, SPEC §7.5) take $refs from these origins
// ("https://schemas.example.com", scheme://host[:port]) and be redirected to them. Without it, a document fetched
// from a URL reads $refs and follows redirects only on its own origin, and a document read from a file reads no
// http(s) $refs at all; refs to files are refused in a fetched document whatever the origins. Each origin must be
// an http(s) URL with a host and nothing after it; a malformed one is an error of Load.
func WithDocumentOrigins(origins ...string) Option {
	return func(o *options) error {
		for _, s := range origins {
			u, err := url.Parse(s)
			if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil ||
				strings.TrimSuffix(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
				return fmt.Errorf("WithDocumentOrigins: %q is not an origin (scheme://host[:port])", s)
			}
			o.refOrigins = append(o.refOrigins, u.Scheme+"://"+strings.ToLower(u.Host))
		}
		return nil
	}
}

// WithAuth sets the provider behind {auth.<provider>()}.
func WithAuth(p AuthProvider) Option {
	return func(o *options) error { o.auth = p; return nil }
}

// WithStore sets where task state is kept (default: NewMemoryStore()).
func WithStore(s Store) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("tool: WithStore: nil store")
		}
		o.store = s
		return nil
	}
}

// WithClock sets the clock (default: the system clock); tests pass tooltest's fake clock.
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("tool: WithClock: nil clock")
		}
		o.clock = c
		return nil
	}
}

// WithRouteIndex makes the Tool's tasks keep their routes in the Store's routing index (store.RouteStore; Load
// fails when the Store does not implement it): the values their allow lists hold, by event, so that a Router in
// store mode (docs/scaling.md) finds a webhook's tasks without holding them. A task writes the routes of the
// values a call adds before the call's backend runs, then the list, then its generation; a call whose routes or
// list could not be stored fails with a recoverable unavailable result before its backend runs. Every replica
// must run with it before a Router turns store mode on (Tool.ReindexRoutes then writes the routes of the tasks
// stored before). It costs a Store round trip per new task and three per growing call.
func WithRouteIndex() Option {
	return func(o *options) error {
		o.routeIndex = true
		return nil
	}
}

// WithReplicaID names this host replica among those sharing a Store (SPEC §13): leases on a task's polls and
// subscription renewals are held in its name. Default: an id drawn once per process, which is right unless one
// process runs several Tools of one manifest over one Store as separate replicas (tests do).
func WithReplicaID(id string) Option {
	return func(o *options) error {
		if id == "" {
			return errors.New("tool: WithReplicaID: empty id")
		}
		o.replica = id
		return nil
	}
}

// processReplicaID is the default replica id: one per process.
var processReplicaID = sync.OnceValue(func() string { return newID("replica_") })

func (o *options) replicaID() string {
	if o.replica != "" {
		return o.replica
	}
	return processReplicaID()
}

// WithLogger sets the logger (default: slog.Default()). Every line a task, its backends and its receivers write
// goes through a handler that masks the task's secrets and their encoded forms (SPEC §12.2) before l's handler
// sees it: the message, every attribute value, groups, and errors' messages.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("tool: WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithObserver sets the receiver of lifecycle facts.
func WithObserver(obs Observer) Option {
	return func(o *options) error { o.observer = obs; return nil }
}

// WithRuntimeInfo sets what {runtime.version}, {runtime.api_root} and {runtime.dashboard_url} resolve to.
func WithRuntimeInfo(info RuntimeInfo) Option {
	return func(o *options) error { o.info = info; return nil }
}

// WithRuntimes sets the action backends (default: runtime.Default()).
func WithRuntimes(r *runtime.Registry) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("tool: WithRuntimes: nil registry")
		}
		o.runtimes = r
		return nil
	}
}

// WithReceivers sets the receive backends (default: events.Default()).
func WithReceivers(r *events.Registry) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("tool: WithReceivers: nil registry")
		}
		o.receivers = r
		return nil
	}
}

// WithWebhookSecret sets the host's fallback signing secret: pushed payloads of events whose receive block names
// no secret are verified with it (SPEC §9.2). The secret is scrubbed from every error, fact and result.
func WithWebhookSecret(secret string) Option {
	return func(o *options) error {
		if secret == "" {
			return errors.New("tool: WithWebhookSecret: empty secret")
		}
		o.webhookSecret = []byte(secret)
		return nil
	}
}

// WithWebhookVerifiers registers signature schemes beyond the built-in GitHub and Standard Webhooks ones. For
// each payload the first verifier whose headers are present checks it, the host's before the built-ins.
func WithWebhookVerifiers(v ...webhook.Verifier) Option {
	return func(o *options) error {
		for _, x := range v {
			if x == nil {
				return errors.New("tool: WithWebhookVerifiers: nil verifier")
			}
		}
		o.verifiers = append(o.verifiers, v...)
		return nil
	}
}

// WithLimits sets the host's limits; zero fields keep their defaults.
func WithLimits(l Limits) Option {
	return func(o *options) error {
		if l.CallTimeout < 0 || l.ResponseBytes < 0 || l.InboundBytes < 0 || l.InboundDepth < 0 || l.InboundValues < 0 ||
			l.CELBytes < 0 ||
			l.AllowListValues < 0 ||
			l.FilterAssignments < 0 || l.TeardownTimeout < 0 || l.MaxCalls < 0 || l.MaxConsecutiveErrors < 0 ||
			l.ResultBytes < 0 || l.DedupeWindow < 0 || l.MaxEventTimeout < 0 || l.ChannelTTL < 0 || l.PollInterval < 0 ||
			l.MaxProcesses < 0 || l.DocumentBytes < 0 || l.GitHubMaxAge < 0 {
			return errors.New("tool: WithLimits: limits must not be negative")
		}
		if l.RenewAt < 0 || l.RenewAt >= 1 {
			return fmt.Errorf("tool: WithLimits: RenewAt %g is not a fraction in (0, 1)", l.RenewAt)
		}
		o.limits = l
		return nil
	}
}

// WithCgroupParent chooses where the processes a task starts (exec programs, stdio MCP servers) are contained.
// Each runs in a child cgroup of dir of its own, started there (clone3 into the cgroup) and ended with cgroup.kill,
// so that nothing it starts outlives its call or its task, setsid and double forks included. dir must be a cgroup
// v2 directory this process can create child cgroups in (Linux 5.14 or later); Load fails otherwise. An empty dir
// turns cgroups off: each process then runs in a process group of its own, which a descendant can leave by
// calling setsid. Without this option the host process's own cgroup v2 is used when it is writable, else process
// groups.
func WithCgroupParent(dir string) Option {
	return func(o *options) error {
		if dir != "" {
			if err := contain.Check(dir); err != nil {
				return fmt.Errorf("tool: WithCgroupParent: %w", err)
			}
		}
		o.cgroup = &dir
		return nil
	}
}

// cgroupParent is the parent cgroup of the processes tasks start: the host's choice, else the detected one.
func (o *options) cgroupParent() string {
	if o.cgroup != nil {
		return *o.cgroup
	}
	return contain.Detect()
}

func newOptions(opts []Option) (*options, error) {
	o := &options{}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.store == nil {
		o.store = NewMemoryStore()
	}
	if _, ok := o.store.(store.RouteStore); o.routeIndex && !ok {
		return nil, errors.New("tool: WithRouteIndex needs a Store that implements store.RouteStore " +
			"(the memory store and store/postgres do)")
	}
	if o.clock == nil {
		o.clock = SystemClock{}
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.runtimes == nil {
		o.runtimes = runtime.Default()
	}
	if o.receivers == nil {
		o.receivers = events.Default()
	}
	o.limits = o.limits.withDefaults()
	if o.httpClient == nil {
		o.httpClient, o.ownClient = NewHTTPClient(0), true
	}
	return o, nil
}

// NewHTTPClient returns an HTTP client tuned for concurrent calls; Load uses NewHTTPClient(0) when the host passes
// no WithHTTPClient. Its transport keeps connsPerHost idle connections per host (defaultConnsPerHost when
// connsPerHost ≤ 0) and four times as many in all, holds TCP connections open with keep-alive probes, speaks
// HTTP/2 over TLS (ForceAttemptHTTP2: a transport with its own dialer needs it), takes proxies from the
// environment and bounds dialing and TLS handshakes. It has no client-wide timeout: each call is bounded by its
// own (the action's timeout, else Limits.CallTimeout).
//
// The default client belongs to the Tool: its idle connections are closed when the last open task of the Tool
// ends, so none outlives the tasks that used it. A client passed with WithHTTPClient stays the host's to tune and
// to close.
func NewHTTPClient(connsPerHost int) *http.Client {
	if connsPerHost <= 0 {
		connsPerHost = defaultConnsPerHost
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * connsPerHost,
		MaxIdleConnsPerHost:   connsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}
