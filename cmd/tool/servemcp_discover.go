package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	mcpbackend "github.com/commonagents-go/tool/runtime/mcp"
)

// discoverAuth returns the option that lets --discover list a protected upstream: the mcp backend authorizes the
// listings at load and at each rediscovery with the client credentials grant of the client named by env (NAME_ID,
// NAME_SECRET, NAME_ISSUER), at that issuer only. Its grant is the gateway's own, used for listing tools and
// nothing else: the sessions' calls keep their users' grants (--upstream-auth). loopback lets the issuer's
// endpoints be on loopback, over http.
func discoverAuth(env string, loopback bool) (tool.Option, error) {
	rc := mcpauth.RegisteredClient{ClientID: os.Getenv(env + "_ID"), Secret: os.Getenv(env + "_SECRET"),
		Issuer: os.Getenv(env + "_ISSUER"), ClientCredentials: true}
	if rc.ClientID == "" || rc.Issuer == "" {
		return nil, fmt.Errorf("--discover-client-env %s: %s_ID or %s_ISSUER is empty or not set", env, env, env)
	}
	c, err := mcpauth.New(mcpauth.Config{RedirectURL: "http://127.0.0.1/unused", // no user step at load
		HTTPClient: mcpauth.Guard{AllowLoopback: loopback}.Client(),
		Registered: func(issuer, resource string) (mcpauth.RegisteredClient, bool) {
			r := rc
			r.Resources = []string{resource}
			return r, strings.TrimSuffix(issuer, "/") == strings.TrimSuffix(rc.Issuer, "/")
		}})
	if err != nil {
		return nil, err
	}
	reg := runtime.NewRegistry() // the command's backends, with the mcp one authorizing its listings
	for _, kind := range runtime.Default().Kinds() {
		rt, _ := runtime.Default().Lookup(kind)
		if kind == mcpbackend.Kind {
			rt = mcpbackend.Backend{LoadAuthorizer: c}
		}
		if err := reg.Register(rt); err != nil {
			return nil, err
		}
	}
	return tool.WithRuntimes(reg), nil
}

// printWarnings prints the load's warnings as validate does: "FILE: warning: ...".
func printWarnings(stderr io.Writer, file string, t *tool.Tool) {
	for _, w := range t.Warnings() {
		fmt.Fprintf(stderr, "%s: warning: %s\n", file, w.String())
	}
}
