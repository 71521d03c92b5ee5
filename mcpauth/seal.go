package mcpauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Sealer encrypts the secret fields of the records a Client keeps in the host's Store (tokens, refresh tokens,
// client secrets, PKCE verifiers) with authenticated encryption. aad is the record's key: a sealed value copied
// under another key does not open. Implementations must be safe for concurrent use; a host may put its KMS
// behind one (envelope encryption). NewAESGCM is the standard library's AES-GCM.
type Sealer interface {
	// Seal returns plaintext encrypted and authenticated together with aad.
	Seal(plaintext, aad []byte) ([]byte, error)
	// Open returns the plaintext of a value Seal returned for the same aad, or an error (ErrSealed for a value
	// no key opens).
	Open(sealed, aad []byte) ([]byte, error)
}

// ErrSealed is returned by a Sealer's Open for a value it cannot open: sealed under a key it no longer has, under
// another record's key, or tampered with.
var ErrSealed = errors.New("mcpauth: a sealed value does not open")

// SealingKey is an AES key (16, 24 or 32 bytes; 32 is AES-256) and its ID, which is written beside each value it
// seals so that Open finds it after a rotation. IDs are at most 255 bytes.
type SealingKey struct {
	ID  string
	Key []byte
}

// NewAESGCM returns a Sealer on AES-GCM with random 96-bit nonces. keys[0] seals; every key opens what it sealed:
// to rotate, put the new key first and keep the old ones until the records they sealed are rewritten (tokens are
// on their next refresh) or gone. A sealed value is: a version byte, the key ID's length and the ID, the nonce,
// the ciphertext and tag.
func NewAESGCM(keys ...SealingKey) (Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("mcpauth: NewAESGCM needs a key")
	}
	s := &aesGCM{byID: map[string]cipher.AEAD{}}
	for i, k := range keys {
		if k.ID == "" || len(k.ID) > 255 {
			return nil, fmt.Errorf("mcpauth: sealing key %d: an ID of 1 to 255 bytes is required", i)
		}
		if _, dup := s.byID[k.ID]; dup {
			return nil, fmt.Errorf("mcpauth: sealing key %d: the ID %q is given twice", i, k.ID)
		}
		block, err := aes.NewCipher(k.Key)
		if err != nil {
			return nil, fmt.Errorf("mcpauth: sealing key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("mcpauth: sealing key %q: %w", k.ID, err)
		}
		s.byID[k.ID] = aead
	}
	s.id, s.seal = keys[0].ID, s.byID[keys[0].ID]
	return s, nil
}

type aesGCM struct {
	id   string
	seal cipher.AEAD
	byID map[string]cipher.AEAD
}

const sealVersion = 1

func (s *aesGCM) Seal(plaintext, aad []byte) ([]byte, error) {
	n := s.seal.NonceSize()
	out := make([]byte, 0, 2+len(s.id)+n+len(plaintext)+s.seal.Overhead())
	out = append(out, sealVersion, byte(len(s.id)))
	out = append(out, s.id...)
	nonce := make([]byte, n)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("mcpauth: sealing: %w", err)
	}
	out = append(out, nonce...)
	return s.seal.Seal(out, nonce, plaintext, aad), nil
}

func (s *aesGCM) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 2 || sealed[0] != sealVersion || len(sealed) < 2+int(sealed[1]) {
		return nil, ErrSealed
	}
	id, rest := string(sealed[2:2+int(sealed[1])]), sealed[2+int(sealed[1]):]
	aead, ok := s.byID[id]
	if !ok || len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrSealed
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], aad)
	if err != nil {
		return nil, ErrSealed
	}
	return plain, nil
}
