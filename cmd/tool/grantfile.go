package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/store"
)

// The local user's grants for remote MCP servers (tool auth login) live in the user's config directory, as gh
// keeps its tokens without a keyring: a file of mode 0600 in a directory of mode 0700. Their secret fields are
// sealed with a key kept in a second file of mode 0600 beside it, so that the grants file alone (in a backup, a
// paste) gives nothing away; anything that runs as the user can read both.
const (
	configDirName  = "commonagents-tool"
	grantsFileName = "mcp-grants.json"
	grantsKeyName  = "mcp-grants.key"
	grantsKeyID    = "local-1"
)

// configDir is the directory of the grants: $XDG_CONFIG_HOME/commonagents-tool on Linux (os.UserConfigDir).
func configDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory: %w", err)
	}
	return filepath.Join(base, configDirName), nil
}

// grantFile is a store.Store in one JSON file, for one user's few records: each operation reads the file, and a
// change rewrites it whole (a temporary file renamed over it), under an exclusive lock on a lock file beside it,
// so that a tool invoke refreshing a grant and a tool auth login running at once do not lose a write. It
// implements SwapStore and ExpiringStore.
type grantFile struct {
	path string
	mu   sync.Mutex // the lock file serialises processes, mu this process's goroutines
}

// fileEntry is one key's value, and when it expires (zero: never).
type fileEntry struct {
	Value   []byte    `json:"v"`
	Expires time.Time `json:"exp,omitzero"`
}

// fileContent is the file: its keys are bytes (base64 in JSON), as a Store's keys may be any bytes.
type fileContent struct {
	Entries []fileRecord `json:"entries"`
}

type fileRecord struct {
	Key []byte `json:"k"`
	fileEntry
}

// update runs f on the file's live entries under the lock, and writes them back when f reports a change.
func (g *grantFile) update(f func(map[string]fileEntry) (changed bool, err error)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	unlock, err := lockFile(g.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	var c fileContent
	raw, err := os.ReadFile(g.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading %s: %w", g.path, err)
	default:
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("reading %s: %w", g.path, err)
		}
	}
	entries := make(map[string]fileEntry, len(c.Entries))
	now := time.Now()
	expired := false
	for _, r := range c.Entries {
		if !r.Expires.IsZero() && !now.Before(r.Expires) {
			expired = true
			continue
		}
		entries[string(r.Key)] = r.fileEntry
	}
	changed, err := f(entries)
	if err != nil || (!changed && !expired) {
		return err
	}
	c.Entries = c.Entries[:0]
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		c.Entries = append(c.Entries, fileRecord{Key: []byte(k), fileEntry: entries[k]})
	}
	out, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	return writePrivate(g.path, out)
}

// writePrivate writes data to path through a temporary file of mode 0600 renamed over it.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func (g *grantFile) Get(_ context.Context, key string) ([]byte, error) {
	var v []byte
	err := g.update(func(m map[string]fileEntry) (bool, error) {
		e, ok := m[key]
		if !ok {
			return false, fmt.Errorf("%s: %w", key, store.ErrNotFound)
		}
		v = e.Value
		return false, nil
	})
	return v, err
}

func (g *grantFile) Put(_ context.Context, key string, value []byte) error {
	return g.update(func(m map[string]fileEntry) (bool, error) {
		m[key] = fileEntry{Value: slices.Clone(value)}
		return true, nil
	})
}

func (g *grantFile) PutTTL(_ context.Context, key string, value []byte, ttl time.Duration) error {
	return g.update(func(m map[string]fileEntry) (bool, error) {
		m[key] = fileEntry{Value: slices.Clone(value), Expires: time.Now().Add(ttl)}
		return true, nil
	})
}

func (g *grantFile) Delete(_ context.Context, key string) error {
	return g.update(func(m map[string]fileEntry) (bool, error) {
		_, ok := m[key]
		delete(m, key)
		return ok, nil
	})
}

func (g *grantFile) List(_ context.Context, prefix string) ([]string, error) {
	var keys []string
	err := g.update(func(m map[string]fileEntry) (bool, error) {
		for k := range m {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		return false, nil
	})
	slices.Sort(keys)
	return keys, err
}

func (g *grantFile) CompareAndSwap(_ context.Context, key string, old, next []byte) (bool, error) {
	swapped := false
	err := g.update(func(m map[string]fileEntry) (bool, error) {
		e, ok := m[key]
		if (old == nil && ok) || (old != nil && (!ok || string(e.Value) != string(old))) {
			return false, nil
		}
		m[key], swapped = fileEntry{Value: slices.Clone(next)}, true
		return true, nil
	})
	return swapped && err == nil, err
}

// localGrants opens the local user's grants: the file store and the sealer of its key. create makes the
// directory and the key when they are missing (tool auth login); without it, ok is false when there are no
// grants yet.
func localGrants(create bool) (st *grantFile, sealer mcpauth.Sealer, ok bool, err error) {
	dir, err := configDir()
	if err != nil {
		return nil, nil, false, err
	}
	keyPath := filepath.Join(dir, grantsKeyName)
	raw, err := os.ReadFile(keyPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && !create:
		return nil, nil, false, nil
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, false, fmt.Errorf("creating %s: %w", dir, err)
		}
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		raw = []byte(base64.StdEncoding.EncodeToString(key) + "\n")
		f, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) { // another login made it meanwhile
			if raw, err = os.ReadFile(keyPath); err != nil {
				return nil, nil, false, fmt.Errorf("reading %s: %w", keyPath, err)
			}
			break
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("creating %s: %w", keyPath, err)
		}
		_, werr := f.Write(raw)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, nil, false, fmt.Errorf("writing %s: %w", keyPath, werr)
		}
	case err != nil:
		return nil, nil, false, fmt.Errorf("reading %s: %w", keyPath, err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != 32 {
		return nil, nil, false, fmt.Errorf("%s does not hold a key: remove it and the grants beside it, and log in again", keyPath)
	}
	sealer, err = mcpauth.NewAESGCM(mcpauth.SealingKey{ID: grantsKeyID, Key: key})
	if err != nil {
		return nil, nil, false, err
	}
	return &grantFile{path: filepath.Join(dir, grantsFileName)}, sealer, true, nil
}
