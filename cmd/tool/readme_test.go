package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readmeCommandLines returns every `go run ./cmd/tool …` command of the sh blocks of README.md and docs/*.md,
// continuation lines joined and comments removed.
func readmeCommandLines(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var src []byte
	for _, page := range append([]string{"../../README.md"}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		src = append(append(src, text...), '\n')
	}
	var lines []string
	inSh, cont := false, ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			inSh = line == "```sh"
			continue
		case !inSh:
			continue
		}
		line = cont + strings.TrimSpace(line)
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cont = rest
			continue
		}
		cont = ""
		if i := strings.Index(line, " # "); i >= 0 {
			line = line[:i]
		}
		if strings.HasPrefix(line, "go run ./cmd/tool ") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

// shellWords splits a command line as sh would for the README's lines: single quotes, globs, one > redirect.
func shellWords(t *testing.T, line string) (args []string, redirect string) {
	t.Helper()
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == ">":
			redirect = words[i+1]
			i++
		case strings.ContainsAny(w, "*?["):
			matches, err := filepath.Glob(w)
			if err != nil || len(matches) == 0 {
				t.Fatalf("%s matches no file", w)
			}
			args = append(args, matches...)
		default:
			args = append(args, w)
		}
	}
	return args, redirect
}

// Every `go run ./cmd/tool …` line of the README and docs/ runs as written, from the repository root, with the files it
// names present, and succeeds.
func TestReadmeCommandLines(t *testing.T) {
	lines := readmeCommandLines(t)
	t.Chdir("../..")
	// A move of the lines to another page must still find them: a count alone would pass with a few left behind.
	if len(lines) < 5 {
		t.Fatalf("found %d command lines in README.md and docs/: %q", len(lines), lines)
	}
	for _, cmd := range []string{"validate", "functions", "invoke", "deliver", "schema"} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "go run ./cmd/tool "+cmd+" ") }) {
			t.Errorf("no sh block of README.md or docs/ runs tool %s", cmd)
		}
	}
	for _, line := range lines {
		args, redirect := shellWords(t, strings.TrimPrefix(line, "go run ./cmd/tool "))
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		if code != 0 {
			t.Errorf("%s\nexit status %d\nstdout: %s\nstderr: %s", line, code, stdout.String(), stderr.String())
			continue
		}
		switch {
		case redirect != "" && !json.Valid(stdout.Bytes()):
			t.Errorf("%s: the output redirected to %s is not JSON", line, redirect)
		case args[0] == "deliver":
			var d struct{ Activations []struct{ Message string } }
			if err := json.Unmarshal(stdout.Bytes(), &d); err != nil || len(d.Activations) != 1 {
				t.Errorf("%s: want one activation, got %s", line, stdout.String())
			}
		case args[0] == "invoke":
			var res struct{ Output any }
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Output == nil {
				t.Errorf("%s: want a result with an output, got %s", line, stdout.String())
			}
		}
	}
}
