package mcpauth_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/commonagents-go/tool/mcpauth"
)

// A sealed value opens under its record's key only, untouched, with a key the Sealer has: after a rotation the
// old key still opens what it sealed, and a Sealer without it does not.
func TestAESGCMSealing(t *testing.T) {
	t.Parallel()
	oldKey := mcpauth.SealingKey{ID: "2026-10", Key: bytes.Repeat([]byte{1}, 32)}
	newKey := mcpauth.SealingKey{ID: "2026-11", Key: bytes.Repeat([]byte{2}, 32)}
	before, err := mcpauth.NewAESGCM(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := before.Seal([]byte("refresh-token-canary"), []byte("mcpauth/grant/a/b"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("refresh-token-canary")) {
		t.Fatal("the sealed value holds the plaintext")
	}
	rotated, _ := mcpauth.NewAESGCM(newKey, oldKey)
	if plain, err := rotated.Open(sealed, []byte("mcpauth/grant/a/b")); err != nil || string(plain) != "refresh-token-canary" {
		t.Errorf("after a rotation: %q, %v", plain, err)
	}
	resealed, _ := rotated.Seal([]byte("x"), nil)
	if _, err := before.Open(resealed, nil); !errors.Is(err, mcpauth.ErrSealed) {
		t.Errorf("a value sealed by the new key, opened without it: %v, want ErrSealed", err)
	}
	if _, err := rotated.Open(sealed, []byte("mcpauth/grant/a/c")); !errors.Is(err, mcpauth.ErrSealed) {
		t.Errorf("under another record's key: %v, want ErrSealed", err)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := rotated.Open(tampered, []byte("mcpauth/grant/a/b")); !errors.Is(err, mcpauth.ErrSealed) {
		t.Errorf("tampered: %v, want ErrSealed", err)
	}
	onlyNew, _ := mcpauth.NewAESGCM(newKey)
	if _, err := onlyNew.Open(sealed, []byte("mcpauth/grant/a/b")); !errors.Is(err, mcpauth.ErrSealed) {
		t.Errorf("the old key retired: %v, want ErrSealed", err)
	}
	for _, bad := range [][]mcpauth.SealingKey{nil, {{ID: "", Key: oldKey.Key}}, {{ID: "k", Key: []byte("short")}},
		{oldKey, oldKey}} {
		if _, err := mcpauth.NewAESGCM(bad...); err == nil {
			t.Errorf("NewAESGCM(%d keys) accepted a bad configuration", len(bad))
		}
	}
}
