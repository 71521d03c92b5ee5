package jsonvalue

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ohler55/ojg/oj"
)

// BenchmarkDecode decodes octokit's GitHub payloads (testdata/conformance), against ojg alone (which reads
// some texts that are not JSON, and 1e400 as +Inf) and encoding/json with UseNumber; scan is the validation
// that Decode adds to ojg.
func BenchmarkDecode(b *testing.B) {
	docs := corpus(b, "octokit-github-payloads.json.gz")
	var texts [][]byte
	size := 0
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range docs {
			if !yield(k) {
				return
			}
		}
	}) {
		texts = append(texts, []byte(docs[k]))
		size += len(docs[k])
	}
	run := func(name string, f func([]byte) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, t := range texts {
					if err := f(t); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	run("jsonvalue", func(t []byte) error { _, err := Decode(t); return err })
	run("scan", func(t []byte) error {
		if _, ok := scan(t); !ok {
			b.Fatal("not JSON")
		}
		return nil
	})
	run("json.Valid", func(t []byte) error {
		if !json.Valid(t) {
			b.Fatal("not JSON")
		}
		return nil
	})
	run("ojg", func(t []byte) error { _, err := oj.Parse(t); return err })
	run("encoding-json", func(t []byte) error { _, err := decodeStd(t); return err })
}
