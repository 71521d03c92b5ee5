package tool

// InFlightPeak is the most request-body bytes r ever held at once (WithInFlightBytes), for tests.
func InFlightPeak(r *Router) int64 {
	r.inFlight.mu.Lock()
	defer r.inFlight.mu.Unlock()
	return r.inFlight.peak
}
