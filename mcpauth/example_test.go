package mcpauth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log"
	"net/http"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/store"
)

// A host that serves many end users: one Client for all of them, its state in the host's Store (store/postgres
// for several replicas), the user's step handed to the host's own UI, the callback completed on any replica.
func ExampleClient() {
	key := make([]byte, 32) // in production: from the host's secret manager, the same on every replica
	_, _ = rand.Read(key)
	sealer, err := mcpauth.NewAESGCM(mcpauth.SealingKey{ID: "2026-11", Key: key})
	if err != nil {
		log.Fatal(err)
	}
	client, err := mcpauth.New(mcpauth.Config{
		RedirectURL:   "https://agent.example.com/oauth/callback",
		Register:      true, // dynamic client registration where the authorization server offers it
		Store:         store.NewMemory(),
		Sealer:        sealer,
		RefreshTokens: true,
		OnAuthorization: func(ctx context.Context, r mcpauth.AuthorizationRequest) error {
			// Show r.AuthorizationURL to the end user r.Subject in the host's UI: never to the LLM.
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Each task names its end user; the tasks of all users share the Client.
	_ = tool.TaskConfig{Subject: "user-digest-1", MCPAuthorizer: client}

	http.HandleFunc("/oauth/callback", func(w http.ResponseWriter, r *http.Request) {
		user := "user-digest-1" // the end user of the callback's session, as the host knows it
		done, err := client.CompleteAuthorization(r.Context(), r.URL.Query(), user)
		switch {
		case errors.Is(err, mcpauth.ErrAccessDenied):
			http.Error(w, "access was not granted", http.StatusForbidden)
		case err != nil:
			http.Error(w, "the authorization could not be completed", http.StatusBadRequest)
		default:
			_, _ = w.Write([]byte("authorized: return to your conversation")) // and tell done.TaskID to call again
			_ = done
		}
	})
}
