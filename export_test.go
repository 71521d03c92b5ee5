package tool

// InFlightPeak is the most request-body bytes r ever held at once (WithInFlightBytes), for tests.
func InFlightPeak(r *Router) int64 {
	r.inFlight.mu.Lock()
	defer r.inFlight.mu.Unlock()
	return r.inFlight.peak
}

// RouteKey is the route a task of namespace/tool holds for a value text of param, for event (store mode).
func RouteKey(namespace, tool, event, param, text string) []byte {
	return routeKey(namespace, tool, event, param, text)
}
