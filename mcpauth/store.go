package mcpauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/commonagents-go/tool/store"
)

// The Client's records in the host's Store, under Config.KeyPrefix. Keys hold hashes, never a subject, a URL or
// a state value; a record's secret fields are sealed with its key as associated data.
//
//	grant/<h(subject)>/<h(server url)>   grantRecord: a user's tokens for a server
//	pending/<h(state)>                   pendingRecord: an authorization waiting for its callback (PutTTL)
//	spent/<h(state)>                     a completed state, claimed once (Claim, or CompareAndSwap from absent)
//	client/<h(issuer)>/<h(redirect url)> clientRecord: a dynamic registration
//	discovery/<h(server url)>            discovered metadata (PutTTL)
const (
	grantDir     = "grant/"
	pendingDir   = "pending/"
	spentDir     = "spent/"
	clientDir    = "client/"
	discoveryDir = "discovery/"
)

// h is the hash that names a value in a key: base64url of SHA-256, with a tag so that the same value under two
// uses gives two names.
func h(tag, v string) string {
	sum := sha256.Sum256([]byte(tag + "\x00" + v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// SubjectDigest is the digest of an end user's key that facts and logs carry instead of the key: "sha256:" and
// 16 hex digits.
func SubjectDigest(subject string) string {
	if subject == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("mcpauth subject\x00" + subject))
	return fmt.Sprintf("sha256:%x", sum[:8])
}

// grantRecord is an end user's grant for a server: what it is for, and its tokens, sealed.
type grantRecord struct {
	Subject   string    `json:"subject"`
	URL       string    `json:"url"` // the canonical server URL: the grant's key
	Resource  string    `json:"resource"`
	Issuer    string    `json:"issuer"`
	ClientID  string    `json:"client_id"`
	ClientKey string    `json:"client_key,omitempty"` // the dynamic registration whose secret authenticates the client
	Token     string    `json:"token_endpoint"`
	Revoke    string    `json:"revocation_endpoint,omitempty"` // RFC 7009, where the server has one
	Method    string    `json:"auth_method"`
	Scopes    []string  `json:"scopes,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Refresh   bool      `json:"refreshable,omitempty"`
	Server    string    `json:"server,omitempty"` // the manifest block it was first granted for
	TaskID    string    `json:"task_id,omitempty"`
	Granted   time.Time `json:"granted"`
	// Issued is when the current access token was issued, set by a refresh; zero: at Granted.
	Issued time.Time `json:"issued,omitzero"`
	// From is the pending record whose completion wrote the grant: the replica that handed out its URL knows
	// its own authorization is done.
	From string `json:"from,omitempty"`
	// Refreshing is set while a replica refreshes the grant: others wait for its result rather than spend the
	// refresh token a second time. A mark past its time is free for the taking (the replica died).
	Refreshing time.Time `json:"refreshing,omitzero"`
	// Nonce changes with every write, so that a compare-and-swap sees a rewrite with equal fields.
	Nonce  string `json:"nonce"`
	Sealed []byte `json:"sealed,omitempty"`
}

type grantSecrets struct {
	Access  string `json:"access_token"`
	Refresh string `json:"refresh_token,omitempty"`
	// Secret is the client's secret, for the refresh on any replica.
	Secret string `json:"client_secret,omitempty"`
}

// pendingRecord is an authorization handed to the user, waiting for its callback.
type pendingRecord struct {
	Subject   string    `json:"subject"`
	TaskID    string    `json:"task_id"`
	CallID    string    `json:"call_id"`
	Server    string    `json:"server"`
	URL       string    `json:"url"`
	Resource  string    `json:"resource"`
	Issuer    string    `json:"issuer"`
	IssParam  bool      `json:"iss_param,omitempty"` // RFC 9207: the callback must carry iss
	ClientID  string    `json:"client_id"`
	ClientKey string    `json:"client_key,omitempty"`
	Token     string    `json:"token_endpoint"`
	Revoke    string    `json:"revocation_endpoint,omitempty"`
	Method    string    `json:"auth_method"`
	Redirect  string    `json:"redirect_uri"`
	Scopes    []string  `json:"scopes,omitempty"`
	Refresh   bool      `json:"refresh,omitempty"` // offline_access was asked for
	StepUp    bool      `json:"step_up,omitempty"`
	Expires   time.Time `json:"expires"`
	Sealed    []byte    `json:"sealed,omitempty"`
}

type pendingSecrets struct {
	Verifier string `json:"verifier"`
	// Secret is the client's secret: the completion, on any replica, authenticates with it.
	Secret string `json:"client_secret,omitempty"`
}

// clientRecord is a dynamic registration with an authorization server.
type clientRecord struct {
	Issuer   string    `json:"issuer"`
	ClientID string    `json:"client_id"`
	Method   string    `json:"auth_method"`
	At       time.Time `json:"registered"`
	Sealed   []byte    `json:"sealed,omitempty"`
}

type clientSecrets struct {
	Secret string `json:"client_secret,omitempty"`
}

// vault seals the secret fields of records with the Sealer or, without one, keeps them in memory only, under the
// record's key: they are never written in clear.
type vault struct {
	sealer Sealer
	mu     sync.Mutex
	mem    map[string]memSecret
	max    int
}

type memSecret struct {
	plain   []byte
	expires time.Time // zero: until replaced
}

// seal returns the sealed secrets for the record at key, or nil when they are kept in memory.
func (v *vault) seal(key string, secrets any, expires time.Time) ([]byte, error) {
	plain, err := json.Marshal(secrets)
	if err != nil {
		return nil, err
	}
	if v.sealer != nil {
		return v.sealer.Seal(plain, []byte(key))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.mem) >= v.max {
		v.sweep()
	}
	v.mem[key] = memSecret{plain: plain, expires: expires}
	return nil, nil
}

// errNoSecrets says that a record's secrets are not here: sealed by a key this Client lacks, or, without a
// Sealer, kept in the memory of another replica (or of this one before a restart).
var errNoSecrets = errors.New("the record's secrets are not available on this replica (no sealing key, or another key)")

// open fills secrets from the record at key.
func (v *vault) open(key string, sealed []byte, secrets any) error {
	var plain []byte
	if v.sealer != nil {
		if sealed == nil {
			return errNoSecrets
		}
		p, err := v.sealer.Open(sealed, []byte(key))
		if err != nil {
			return errNoSecrets
		}
		plain = p
	} else {
		v.mu.Lock()
		m, ok := v.mem[key]
		v.mu.Unlock()
		if !ok {
			return errNoSecrets
		}
		plain = m.plain
	}
	return json.Unmarshal(plain, secrets)
}

func (v *vault) forget(key string) {
	if v.sealer == nil {
		v.mu.Lock()
		delete(v.mem, key)
		v.mu.Unlock()
	}
}

// sweep drops expired secrets, and when none expired, some at random (map order): the bound holds; v.mu is held.
func (v *vault) sweep() {
	now := time.Now()
	for k, m := range v.mem {
		if !m.expires.IsZero() && now.After(m.expires) {
			delete(v.mem, k)
		}
	}
	for k := range v.mem {
		if len(v.mem) < v.max {
			return
		}
		delete(v.mem, k)
	}
}

// records reads and writes the Client's records in the Store.
type records struct {
	st     store.Store
	prefix string
	vault  *vault
}

func (r *records) get(ctx context.Context, key string, rec any) ([]byte, error) {
	raw, err := r.st.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("mcpauth: the record %s: %w", key, err)
	}
	return raw, nil
}

// putTTL writes a record that expires; a Store that cannot expire keys gets a plain Put (the record carries its
// own expiry, which readers check).
func (r *records) putTTL(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if es, ok := r.st.(store.ExpiringStore); ok {
		return es.PutTTL(ctx, key, value, ttl)
	}
	return r.st.Put(ctx, key, value)
}

// swap is a compare-and-swap on key (old nil: absent), or, on a Store without one, a Put after a read that
// found old: good for one replica only.
func (r *records) swap(ctx context.Context, key string, old, next []byte) (bool, error) {
	if ss, ok := r.st.(store.SwapStore); ok {
		return ss.CompareAndSwap(ctx, key, old, next)
	}
	cur, err := r.st.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if old != nil {
			return false, nil
		}
	case err != nil:
		return false, err
	case string(cur) != string(old):
		return false, nil
	}
	return true, r.st.Put(ctx, key, next)
}

// claimOnce marks key as taken, once across replicas: exactly one of racing callers gets true.
func (r *records) claimOnce(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	mark := []byte(randomString(12)) // a value of this claim's own: a ClaimStore tells the winner by it
	if cs, ok := r.st.(store.ClaimStore); ok {
		claimed, _, err := cs.Claim(ctx, key, mark, ttl)
		return claimed, err
	}
	won, err := r.swap(ctx, key, nil, mark)
	if won && err == nil {
		_ = r.putTTL(ctx, key, mark, ttl) // a swap writes without expiry: let the Store forget the mark
	}
	return won, err
}

// issued is when the grant's current access token was issued.
func (g *grantRecord) issued() time.Time {
	if !g.Issued.IsZero() {
		return g.Issued
	}
	return g.Granted
}
