package tool_test

import (
	"os"
	"testing"

	"github.com/commonagents-go/tool/internal/testflags"
)

// TestMain lets 4 parallel tests run at once: the slowest wait on real deadlines, leases and servers, not on the
// CPU (TestRouterDeadlineDuringTheClaimStillActivates, TestPollLeaseSurvivesASlowSink).
func TestMain(m *testing.M) {
	testflags.WaitBoundParallel(4)
	os.Exit(m.Run())
}
