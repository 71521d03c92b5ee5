//go:build !linux

package contain

import "errors"

var errNoCgroups = errors.New("cgroups need Linux")

func makeCgroup(string) (int, error) { return -1, errNoCgroups }

func killCgroup(string) error { return errNoCgroups }

func removeCgroup(string) error { return errNoCgroups }

// Detect returns "": cgroups need Linux.
func Detect() string { return "" }

// Check fails: cgroups need Linux.
func Check(string) error { return errNoCgroups }
