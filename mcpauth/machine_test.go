package mcpauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"

	"github.com/commonagents-go/tool/mcpauth"
)

// A pre-registered client with a key takes the host's token with the client_credentials grant and a
// private_key_jwt assertion (ES256 or RS256, the test server verifying signature, iss, sub, aud), for a task
// without an end user; the token is shared: a fresh replica's task without an end user gets it from the Store,
// without a second grant.
func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, key := range map[string]crypto.Signer{"ES256": ec, "RS256": rs} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.as.clientKey, f.as.grantTypes = key.Public(), []string{"client_credentials"}
			edit := func(cfg *mcpauth.Config) {
				cfg.Register = false
				cfg.Registered = func(issuer, resource string) (mcpauth.RegisteredClient, bool) {
					return mcpauth.RegisteredClient{Issuer: issuer, Resources: []string{resource}, ClientID: "machine",
						Key: key, ClientCredentials: true}, true
				}
			}
			ctx := context.Background()
			a := f.replica(edit)
			if err := a.Challenge(ctx, f.server(""), f.challenge()); err != nil {
				t.Fatalf("Challenge = %v", err)
			}
			tok, err := a.Token(ctx, f.server(""))
			if err != nil || tok == "" {
				t.Fatalf("Token = %q, %v", tok, err)
			}
			if again, _ := f.replica(edit).Token(ctx, f.server("")); again != tok {
				t.Errorf("a fresh replica's Token = %q, want the host's %q", again, tok)
			}
			if n := len(f.as.assertions); n != 1 {
				t.Errorf("%d verified assertions, want 1", n)
			}
			if len(f.urls) != 0 {
				t.Error("a user step for a machine client")
			}
		})
	}
}
