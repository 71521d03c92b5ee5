package postgres_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The store is a leaf: it depends on the Store contract (package store) and the driver, never on the library's
// root, its loader or cel-go.
func TestDependsOnTheContractOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/commonagents-go/tool/store/postgres").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "cel.dev/") || strings.Contains(dep, "google/cel-go") ||
			dep == "github.com/commonagents-go/tool" ||
			strings.HasPrefix(dep, "github.com/commonagents-go/tool/") && dep != "github.com/commonagents-go/tool/store" &&
				dep != "github.com/commonagents-go/tool/store/postgres" {
			t.Errorf("store/postgres depends on %s", dep)
		}
	}
}
