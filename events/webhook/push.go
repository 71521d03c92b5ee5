package webhook

import "github.com/commonagents-go/tool/events"

// Push returns the event's signing secret template (nil when the manifest names none).
func (e *Event) Push() events.Push { return events.Push{Secret: e.Secret} }

var _ events.Pushed = (*Event)(nil)
