//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path (created, mode 0600) and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the grants: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the grants: %w", err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}
