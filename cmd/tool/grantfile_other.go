//go:build !unix

package main

// lockFile is a no-op where flock is missing: one process at a time is the user's to keep.
func lockFile(string) (func(), error) { return func() {}, nil }
