package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/commonagents-go/tool"
	"sigs.k8s.io/yaml"
)

var validateCommand = command{
	name:     "validate",
	synopsis: "[--settings FILE] FILE...",
	summary:  "check manifests and report every problem with its line and field path",
	detail: `Validate loads each manifest and prints every problem on stdout as
	FILE: LINE:COL: PATH: DETAIL
then "FILE: ok" for each manifest without problems. Warnings go to stderr as
"FILE: warning: ...". Without --settings, settings are not checked.
The exit code is 1 when any manifest has problems or cannot be read.`,
	run: runValidate,
}

func runValidate(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	settingsFile := fs.String("settings", "", "a YAML or JSON `FILE` mapping setting keys to values, applied to every manifest")
	files, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(files) == 0 {
		return usageError(fs, "no manifest files given")
	}
	opts, err := settingsOption(*settingsFile)
	if err != nil {
		fmt.Fprintf(stderr, "tool validate: %v\n", err)
		return exitProblem
	}
	code = exitOK
	for _, file := range files {
		t, err := tool.LoadFile(ctx, file, opts...)
		if err != nil {
			reportLoadError(stdout, stderr, file, err)
			code = exitProblem
			continue
		}
		for _, w := range t.Warnings() {
			fmt.Fprintf(stderr, "%s: warning: %s\n", file, w.String())
		}
		fmt.Fprintf(stdout, "%s: ok\n", file)
	}
	return code
}

// reportLoadError says why file did not load: each manifest problem on problems as "FILE: LINE:COL: PATH: DETAIL",
// any other failure (the file cannot be read) on stderr.
func reportLoadError(problems, stderr io.Writer, file string, err error) {
	var verr *tool.ValidationError
	if errors.As(err, &verr) {
		for _, p := range verr.Problems {
			fmt.Fprintf(problems, "%s: %s\n", file, p.String())
		}
		return
	}
	var perr *os.PathError
	if errors.As(err, &perr) {
		fmt.Fprintf(stderr, "%s: cannot read the manifest: %v\n", file, perr.Err)
		return
	}
	fmt.Fprintf(stderr, "%s: %v\n", file, err)
}

// settingsOption reads a settings file (a YAML or JSON mapping) into a WithSettings option; none for "".
func settingsOption(path string) ([]tool.Option, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	settings := map[string]any{}
	if err := yaml.UnmarshalStrict(data, &settings); err != nil {
		return nil, fmt.Errorf("settings %s: want a mapping of setting keys to values: %w", path, err)
	}
	if settings == nil { // the file holds null or nothing
		settings = map[string]any{}
	}
	return []tool.Option{tool.WithSettings(settings)}, nil
}
