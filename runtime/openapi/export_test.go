package openapi

import "time"

// ForgetDocuments empties the process-wide document cache, so a benchmark can measure a cold Load.
func ForgetDocuments() { documents.clear() }

// CachedDocuments reports how many parsed documents the process-wide cache holds.
func CachedDocuments() int { return documents.len() }

// AdvanceCacheClock moves the cache's clock forward by d for the rest of the test binary.
func AdvanceCacheClock(d time.Duration) {
	documents.mu.Lock()
	defer documents.mu.Unlock()
	prev := documents.now
	documents.now = func() time.Time { return prev().Add(d) }
}
