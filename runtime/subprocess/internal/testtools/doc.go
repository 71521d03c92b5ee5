// Package testtools holds the programs the exec backend's tests run: each subdirectory is a main package that the
// tests build into a temporary directory. Oneshot programs read {"args": {...}} from stdin and write one JSON
// object to stdout (rawout writes what it is given, to test how replies are read); rpcserver and rawserver speak
// line-delimited JSON-RPC 2.0.
package testtools
