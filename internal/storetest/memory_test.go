package storetest_test

import (
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) tool.Store { return tool.NewMemoryStore() })
}
