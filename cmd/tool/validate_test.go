package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

const brokenManifest = `kind: "commonagents.info/v1beta2/tool"
namespace: "tests"
name: "broken"
description: "A manifest with a typo."
actions:
  - name: answer
    description: "Returns 42."
    execute:
      cel:
        expresion: "42"
`

func TestValidate(t *testing.T) {
	t.Parallel()
	broken := writeFile(t, "broken.yaml", brokenManifest)
	syntax := writeFile(t, "syntax.yaml", "kind: x\n  bad: [\n")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	celFile := filepath.Join(okDir, "cel.yaml")
	goodSettings := writeFile(t, "settings.yaml", "github.token: ghp-not-a-token\n")
	unknownSetting := writeFile(t, "settings.json", `{"github.token": "x", "colour": "blue"}`)
	notAMap := writeFile(t, "list.yaml", "- a\n- b\n")

	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    []string // lines stdout must contain, in order
		notStdout []string
		stderr    []string // substrings
	}{
		{name: "clean file", args: []string{"validate", celFile}, code: exitOK,
			stdout: []string{celFile + ": ok"}},
		{name: "broken file", args: []string{"validate", broken}, code: exitProblem,
			stdout: []string{
				broken + `: 10:9: actions[0].execute.cel.expresion: unknown field "expresion" (did you mean "expression"?)`,
				broken + ": 9:7: actions[0].execute.cel.expression: expression is required",
			},
			notStdout: []string{": ok"}},
		{name: "syntax error has a line and no column", args: []string{"validate", syntax}, code: exitProblem,
			stdout: []string{syntax + ": 2: YAML syntax error at line 2: "}},
		{name: "missing file", args: []string{"validate", missing}, code: exitProblem,
			stderr: []string{missing + ": cannot read the manifest: no such file or directory"}},
		{name: "every file is checked", args: []string{"validate", missing, broken, celFile}, code: exitProblem,
			stdout: []string{broken + ": 10:9: ", celFile + ": ok"},
			stderr: []string{missing + ": cannot read"}},
		{name: "warnings go to stderr", args: []string{"validate", filepath.Join(okDir, "github-pr.yaml")}, code: exitOK,
			stdout: []string{"github-pr.yaml: ok"},
			stderr: []string{"github-pr.yaml: warning: 50:9: events[0].receive.webhook.secret: "}},
		{name: "settings after the file", args: []string{"validate", celFile, "--settings", goodSettings}, code: exitOK,
			stdout: []string{celFile + ": ok"}},
		{name: "settings are checked against the schema", args: []string{"validate", "--settings", unknownSetting, celFile},
			code: exitProblem, stdout: []string{celFile + `: 7:1: settings.colour: setting "colour" is not declared`}},
		{name: "empty settings miss a required setting", args: []string{"validate", "--settings", writeFile(t, "empty.yaml", ""), celFile},
			code: exitProblem, stdout: []string{celFile + ": "}, notStdout: []string{": ok"}},
		{name: "settings file that is not a mapping", args: []string{"validate", "--settings", notAMap, celFile},
			code: exitProblem, stderr: []string{"settings " + notAMap + ": want a mapping"}},
		{name: "missing settings file", args: []string{"validate", "--settings", missing, celFile},
			code: exitProblem, stderr: []string{"settings: open " + missing}},
		{name: "no files", args: []string{"validate"}, code: exitUsage,
			stderr: []string{"no manifest files given"}},
		{name: "settings without a value", args: []string{"validate", celFile, "--settings"}, code: exitUsage,
			stderr: []string{"flag needs an argument: -settings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runTool(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			rest := stdout
			for _, line := range tt.stdout {
				i := strings.Index(rest, line)
				if i < 0 {
					t.Errorf("stdout lacks %q (or has it out of order):\n%s", line, stdout)
					continue
				}
				rest = rest[i+len(line):]
			}
			for _, s := range tt.notStdout {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}

func TestValidateAllOK(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(okDir, "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("want the manifests of %s, got %d (%v)", okDir, len(files), err)
	}
	code, stdout, stderr := runTool(t, append([]string{"validate"}, files...)...)
	for _, f := range files {
		if want := f + ": ok"; !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if code != exitOK {
		t.Errorf("exit code %d, want %d\nstderr:\n%s", code, exitOK, stderr)
	}
}

func TestFormatProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    tool.Problem
		want string
	}{
		{tool.Problem{Path: "name", Detail: "d", Line: 3, Column: 7}, "3:7: name: d"},
		{tool.Problem{Path: "name", Detail: "d", Line: 3}, "3: name: d"},
		{tool.Problem{Path: "name", Detail: "d"}, "name: d"},
		{tool.Problem{Detail: "d", Line: 2, Column: 1}, "2:1: d"},
		{tool.Problem{Detail: "d"}, "d"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("Problem.String(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}
