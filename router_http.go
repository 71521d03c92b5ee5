package tool

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The webhook endpoint: HTTP in front of Router.Dispatch.

// Register registers the webhook endpoint on m: the subtree {prefix}/, so any Mux works.
func (r *Router) Register(m Mux) { m.Handle(r.prefix+"/", r) }

// ServeHTTP serves POST {prefix}/{namespace}/{tool}. It answers 202 once every activation the payload caused
// was accepted by its task's Sink (also when no task wanted it), 503 when a Sink refused one, an earlier attempt
// with the same delivery id is still with a Sink (in_flight), or the request's context ended before every task's
// outcome was decided (the sender retries; activations already accepted are then discarded as duplicates if the
// sender gives a delivery id), 401 when the signature was bad for every event, 500 when the events are
// misconfigured (a missing secret setting) and nothing else happened, 413 for a body over the limit or a JSON
// payload over Limits.InboundDepth or Limits.InboundValues that no event took otherwise, 503 with Retry-After
// when the bodies in flight are at their cap (RouterOptions.InFlightBytes), 404 for a path that names no tool the Router
// ever held or served (Serve), 405 for other methods and 400 for an event name the tool does not have.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, r.prefix+"/")
	namespace, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || namespace == "" || name == "" || strings.Contains(name, "/") {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	limit, known := r.limit(namespace, name)
	if !known {
		http.NotFound(w, req)
		return
	}
	if req.ContentLength > limit {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	share := limit
	if req.ContentLength >= 0 {
		share = req.ContentLength
	}
	if !r.inFlight.acquire(share) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many payloads in flight", http.StatusServiceUnavailable)
		return
	}
	defer r.inFlight.release(share)
	body, err := readBody(w, req, limit)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	deliveries, err := r.Dispatch(req.Context(), namespace, name, &Inbound{Headers: req.Header, Body: body})
	status := statusOf(deliveries, err)
	if status == http.StatusServiceUnavailable { // a Sink refused, or another attempt holds the delivery id
		w.Header().Set("Retry-After", retryRefused)
	}
	if status != http.StatusAccepted {
		http.Error(w, http.StatusText(status), status)
		return
	}
	activations := 0
	for _, d := range deliveries {
		activations += len(d.Activations)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]int{"activations": activations})
}

// retryRefused is the Retry-After of a 503 for a refused or in-flight delivery, in seconds: long enough for the
// attempt that holds the delivery id to reach its Sink's accept in the common case.
const retryRefused = "5"

// readBody reads a request body of at most limit bytes. A body with a Content-Length is read into a buffer of
// exactly that size (io.ReadAll would grow its buffer and copy, about twice the body in allocations).
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	src := http.MaxBytesReader(w, req.Body, limit)
	if req.ContentLength < 0 {
		return io.ReadAll(src)
	}
	body := make([]byte, req.ContentLength)
	if _, err := io.ReadFull(src, body); err != nil {
		return nil, err
	}
	return body, nil
}

// budget counts the bytes of bodies in flight against a limit.
type budget struct {
	mu          sync.Mutex
	limit, used int64
	peak        int64 // the most ever held, for tests
}

// acquire takes n bytes unless that would go over the limit while something else is in flight.
func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// limit is the largest inbound size of the tool's groups, or that of its last Tool value when it has none; false
// when the Router never held or served the tool.
func (r *Router) limit(namespace, name string) (int64, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rs := r.tools[namespace+"/"+name]
	if rs == nil {
		return 0, false
	}
	if len(rs.groups) == 0 {
		return rs.limit, true
	}
	var limit int64
	for _, g := range rs.groups {
		limit = max(limit, g.tool.opts.limits.InboundBytes)
	}
	return limit, true
}

// statusOf maps a dispatch to the HTTP status of ServeHTTP.
func statusOf(deliveries []*Delivery, err error) int {
	switch {
	case errors.Is(err, ErrNotAccepted):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrPayloadTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnknownTool):
		return http.StatusNotFound
	case errors.Is(err, ErrUnknownEvent):
		return http.StatusBadRequest
	case err != nil:
		return http.StatusInternalServerError
	}
	bad, misconfigured, tooComplex, other := 0, 0, 0, 0
	for _, d := range deliveries {
		other += len(d.Activations)
		for _, x := range d.Discarded {
			switch x.Reason {
			case ReasonInFlight: // another attempt has not reached its Sink's accept: only a retry can tell
				return http.StatusServiceUnavailable
			case ReasonBadSignature:
				bad++
			case ReasonMisconfigured:
				misconfigured++
			case ReasonTooComplex:
				tooComplex++
			default:
				other++
			}
		}
	}
	switch {
	case other > 0:
		return http.StatusAccepted
	case misconfigured > 0: // e.g. the secret setting is missing: the sender should keep the payload and retry
		return http.StatusInternalServerError
	case tooComplex > 0: // nothing took the payload, and the events without a valid signature could not parse it
		return http.StatusRequestEntityTooLarge
	case bad > 0:
		return http.StatusUnauthorized
	}
	return http.StatusAccepted
}
