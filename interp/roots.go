package interp

// The known roots (SPEC §4.1). Which of them a field may use is the caller's decision (SPEC §4.2).
const (
	RootParameters   = "parameters"
	RootSettings     = "settings"
	RootSession      = "session"
	RootRuntime      = "runtime"
	RootAgent        = "agent"
	RootMount        = "mount"
	RootAuth         = "auth"
	RootContext      = "context"
	RootEvent        = "event"
	RootSubscription = "subscription"
	RootSubscribe    = "subscribe"
	RootItem         = "item"
	RootPoll         = "poll"
)

// Roots returns the known roots in the order SPEC §4.1 lists them. The slice is the caller's to keep.
func Roots() []string {
	return []string{RootParameters, RootSettings, RootSession, RootRuntime, RootAgent, RootMount, RootAuth,
		RootContext, RootEvent, RootSubscription, RootSubscribe, RootItem, RootPoll}
}

func isRoot(s string) bool {
	switch s {
	case RootParameters, RootSettings, RootSession, RootRuntime, RootAgent, RootMount, RootAuth,
		RootContext, RootEvent, RootSubscription, RootSubscribe, RootItem, RootPoll:
		return true
	}
	return false
}
