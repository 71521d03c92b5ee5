package main

import (
	"path/filepath"
	"testing"

	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/storetest"
)

// The grants file is a Store by the library's conformance suite (the parts it implements: values, List,
// CompareAndSwap under concurrency, TTLs).
func TestGrantFileConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return &grantFile{path: filepath.Join(t.TempDir(), grantsFileName)}
	})
}
