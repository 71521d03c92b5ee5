package tool

// defaultConnsPerHost is how many idle connections per host the default HTTP client keeps: as many as the calls
// an MCP host runs at once (mcpserve.DefaultWorkers), so that concurrent calls to one backend reuse connections
// instead of opening new ones (net/http's own default keeps 2).
const defaultConnsPerHost = 32

// taskEnded counts a task out; when it was the Tool's last open one, the default client's idle connections are
// closed, so that no connection (and no goroutine serving it) outlives the tasks.
func (t *Tool) taskEnded() {
	if t.openTasks.Add(-1) == 0 && t.opts.ownClient {
		t.opts.httpClient.CloseIdleConnections()
	}
}
