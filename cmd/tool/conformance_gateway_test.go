package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The official suite's server scenarios about tools, through serve-mcp --http --discover --action-names in front of
// the go-sdk's conformance everything-server (built by scripts/mcp-everything-server.sh): a gateway passes what its
// upstream passes on its own, the upstream's sampling and elicitation requests reaching the suite's client and its
// JSON Schema 2020-12 input schema served whole.

// toolScenarios are the suite's server scenarios about tools that an upstream server may pass.
var toolScenarios = []string{"tools-call-simple-text", "tools-call-error", "tools-call-image", "tools-call-audio",
	"tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging", "tools-call-with-progress",
	"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
	"json-schema-2020-12"}

var (
	everythingOnce sync.Once
	everythingBin  string
	everythingErr  error
)

// everythingServer starts the go-sdk's everything-server in its stateful mode (sampling and elicitation need it) and
// returns its URL. Without CI set, the test skips where the script cannot build it; under CI that fails it.
func everythingServer(t *testing.T) string {
	t.Helper()
	everythingOnce.Do(func() {
		out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "mcp-everything-server.sh")).Output()
		if err != nil {
			var stderr string
			if e, ok := err.(*exec.ExitError); ok {
				stderr = string(e.Stderr)
			}
			everythingErr = fmt.Errorf("%v: %s", err, stderr)
			return
		}
		everythingBin = strings.TrimSpace(string(out))
	})
	if everythingErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("building the go-sdk's everything-server: %v", everythingErr)
		}
		t.Skipf("the go-sdk's everything-server cannot be built here: %v", everythingErr)
	}
	// It cannot report a port of its own choosing either: as for mcp-go's, an address free a moment ago; it is
	// ready once it accepts connections.
	return startOnFreeAddr(t, "the everything-server", func(addr string) *exec.Cmd {
		return exec.Command(everythingBin, "-http", addr, "-stateless=false")
	}, func(addr string) bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
}

// throughGateway runs each scenario against upstream alone and, when it passes there, through gw; it returns how
// many passed alone.
func throughGateway(t *testing.T, upstream, gw, who string, scenarios []string) int {
	var alone atomic.Int32
	t.Run("scenarios", func(t *testing.T) {
		for _, name := range scenarios {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if ok, _ := scenario(t, "server", upstream, name); !ok {
					t.Logf("%s: %s fails it on its own", name, who)
					return
				}
				alone.Add(1)
				if ok, out := scenario(t, "server", gw, name); !ok {
					t.Errorf("%s passes against %s, not through the gateway:\n%s", name, who, out)
				}
			})
		}
	})
	return int(alone.Load())
}

// TestMCPConformanceGateway: in front of the go-sdk's everything-server, which passes all 13 scenarios about tools
// on its own, the gateway passes all 13.
func TestMCPConformanceGateway(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	upstream := everythingServer(t)
	gw := serveMCPHTTP(t, writeFile(t, "gw.yaml", gatewayManifest(upstream)), nil, "--discover", "--action-names")
	if n := throughGateway(t, upstream, gw.url, "the everything-server", toolScenarios); n != len(toolScenarios) {
		t.Errorf("the everything-server passes %d of the %d scenarios on its own, want all", n, len(toolScenarios))
	}
}
