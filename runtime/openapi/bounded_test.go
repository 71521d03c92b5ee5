package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/openapi"
)

// wideDoc's body fans out five levels of ten properties each (111,111 schema nodes once inlined): over the bounds
// of the schema shown to an LLM.
func wideDoc() string {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/things":{"post":{"operationId":"create",
"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/L0"}}}},
"responses":{"200":{"description":"ok"}}}}},"components":{"schemas":{`)
	for level := range 5 {
		fmt.Fprintf(&b, `"L%d":{"type":"object","description":"level %d","properties":{`, level, level)
		for i := range 10 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d":{"$ref":"#/components/schemas/L%d"}`, i, level+1)
		}
		b.WriteString(`}},`)
	}
	b.WriteString(`"L5":{"type":"integer","description":"a leaf"}}}}`)
	return b.String()
}

// TestLargeSchemaShownBounded pins that an operation whose inlined schema is over the bounds becomes an action
// all the same: the LLM sees it to a depth within MaxSchemaBytes, deeper levels {} with their descriptions, the
// description and a load warning say so, and arguments are validated against the full schema.
func TestLargeSchemaShownBounded(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, wideDoc(), "", "")
	if s := tl.Skipped(); len(s) != 0 {
		t.Fatalf("skipped: %+v", s)
	}
	fns := tl.Functions(tool.Capability{})
	if len(fns) != 1 {
		t.Fatalf("%d functions", len(fns))
	}
	f := fns[0]
	if len(f.Parameters) > openapi.MaxSchemaBytes || !strings.Contains(string(f.Parameters), `{"description":"level `) {
		t.Errorf("shown schema: %d bytes, deeper levels not {} with their description", len(f.Parameters))
	}
	if !strings.Contains(f.Description, "levels deep") {
		t.Errorf("description %q does not say the schema is bounded", f.Description)
	}
	warned := false
	for _, w := range tl.Warnings() {
		warned = warned || w.Path == "openapi" && strings.Contains(w.Detail, "levels deep")
	}
	if !warned {
		t.Errorf("no load warning: %v", tl.Warnings())
	}
	deep := func(leaf any) map[string]any {
		return map[string]any{"p0": map[string]any{"p1": map[string]any{"p2": map[string]any{"p3": map[string]any{"p4": leaf}}}}}
	}
	before := srv.count()
	if res := invokeOnce(t, tl, "create", map[string]any{"body": deep("seven")}); !res.IsError ||
		res.Error.Kind != runtime.KindInvalidArguments || srv.count() != before {
		t.Errorf("a string where the full schema wants an integer: %+v (sent %d)", res.Error, srv.count()-before)
	}
	if res := invokeOnce(t, tl, "create", map[string]any{"body": deep(7), "extra": 1}); !res.IsError {
		t.Errorf("an argument no schema declares was accepted")
	}
	if res := invokeOnce(t, tl, "create", map[string]any{"body": deep(7)}); res.IsError {
		t.Fatalf("a valid deep value: %+v", res.Error)
	}
	var sent any
	if err := json.Unmarshal(srv.last(t).Body, &sent); err != nil || fmt.Sprint(sent) != fmt.Sprint(deep(7.0)) {
		t.Errorf("sent %s", srv.last(t).Body)
	}
}

// TestDocumentBytesOption pins that tool.Limits.DocumentBytes sets the bound of a document read at load, and that a
// cached document read under one bound is not served to a Load under a smaller one.
func TestDocumentBytesOption(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	m := []byte(docManifest(t, srv, defaultsDoc, "", ""))
	if _, err := tool.Load(context.Background(), m, tool.WithLimits(tool.Limits{DocumentBytes: 1 << 20})); err != nil {
		t.Fatalf("under 1 MiB: %v", err)
	}
	_, err := tool.Load(context.Background(), m, tool.WithLimits(tool.Limits{DocumentBytes: 100}))
	if err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Errorf("over a 100-byte bound: %v", err)
	}
	if _, err := tool.Load(context.Background(), m, tool.WithLimits(tool.Limits{DocumentBytes: -1})); err == nil {
		t.Error("a negative bound was accepted")
	}
}
