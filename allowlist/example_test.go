package allowlist_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/celenv"
)

// The walkthrough of SPEC §6: the agent bound the repository, and the assignee is learnt from calls.
func ExampleList_Match() {
	prog, err := celenv.Compile(celenv.ScopeFilter,
		`event.payload.issue.assignee.login == parameters.assignee && event.payload.repository.name == parameters.repo`,
		celenv.Limits{})
	if err != nil {
		panic(err)
	}
	filter := allowlist.NewFilter(prog) // at load

	list := allowlist.New(0) // at NewTask
	list.Seal("repo", "tool")

	deliver := func(payload string) {
		var p any
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			panic(err)
		}
		vars := map[string]any{"event": map[string]any{"payload": p}, "now": "2026-05-20T03:45:00Z"}
		d := filter.Prepare(context.Background(), vars)
		out := list.Match(context.Background(), d, 0)
		fmt.Println(out.Reason, out.Name, out.Parameters)
	}
	alice := `{"issue":{"assignee":{"login":"alice"}},"repository":{"name":"tool"}}`
	bob := `{"issue":{"assignee":{"login":"bob"}},"repository":{"name":"tool"}}`

	deliver(alice)
	list.AddAll(map[string]any{"assignee": "alice", "repo": "elsewhere"}) // an Invoke; repo is sealed
	deliver(alice)
	deliver(bob)
	fmt.Println(list.Snapshot())
	// Output:
	// empty_allow_list assignee map[]
	// matched  map[assignee:alice repo:tool]
	// filter_false  map[]
	// map[assignee:[alice] repo:[tool]]
}
