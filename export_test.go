package tool

// InFlightPeak is the most request-body bytes r ever held at once (RouterOptions.InFlightBytes), for tests.
func InFlightPeak(r *Router) int64 {
	r.inFlight.mu.Lock()
	defer r.inFlight.mu.Unlock()
	return r.inFlight.peak
}

// RouteKey is the route a task of namespace/tool holds for a value text of param, for event (store mode).
func RouteKey(namespace, tool, event, param, text string) []byte {
	return routeKey(namespace, tool, event, param, text)
}

// LentTasks is how many tasks the task caches of r lend at the moment (store mode), for tests.
func LentTasks(r *Router) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for _, rs := range r.tools {
		for _, g := range rs.groups {
			if c := g.cache; c != nil {
				c.mu.Lock()
				for _, e := range c.entries {
					n += e.lent
				}
				c.mu.Unlock()
			}
		}
	}
	return n
}

// WaitDetached waits until the goroutine that detaches the tasks r's caches evict has nothing left to do (store
// mode), for tests.
func WaitDetached(r *Router) {
	for {
		r.evicted.mu.Lock()
		done := r.evicted.done
		r.evicted.mu.Unlock()
		if done == nil {
			return
		}
		<-done
	}
}
