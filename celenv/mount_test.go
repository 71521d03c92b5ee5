package celenv_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/commonagents-go/tool/celenv"
)

type ctxKey struct{}

// fakeMount stores files in memory and records the context value each call saw.
type fakeMount struct {
	mu    sync.Mutex
	files map[string]string
	calls []string
	fail  error
}

func (m *fakeMount) Read(ctx context.Context, path string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "read "+path+" "+ctx.Value(ctxKey{}).(string))
	if m.fail != nil {
		return "", m.fail
	}
	return m.files[path], nil
}

func (m *fakeMount) Write(ctx context.Context, path, content string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "write "+path+" "+ctx.Value(ctxKey{}).(string))
	if m.fail != nil {
		return "", m.fail
	}
	m.files[path] = content
	return "mem://" + path, nil
}

func TestMount(t *testing.T) {
	t.Parallel()
	errDisk := errors.New("disk on fire")
	tests := []struct {
		name   string
		expr   string
		noMnt  bool
		fail   error
		want   any
		is     error
		calls  []string
		files  map[string]string
		errHas string
	}{
		{name: "read", expr: `mount.read('docs/' + input.name)`, want: "hello",
			calls: []string{"read docs/a.md call-1"}},
		{name: "write then read", expr: `[mount.write('out/b.md', input.text), mount.read('out/b.md')]`,
			want:  []any{"mem://out/b.md", "secret text"},
			calls: []string{"write out/b.md call-1", "read out/b.md call-1"},
			files: map[string]string{"docs/a.md": "hello", "out/b.md": "secret text"}},
		{name: "dotdot", expr: `mount.read('docs/../../etc/passwd')`, is: celenv.ErrMountPath},
		{name: "dotdot from input", expr: `mount.write(input.evil, 'x')`, is: celenv.ErrMountPath},
		{name: "backslash dotdot", expr: `mount.read('a\\..\\b')`, is: celenv.ErrMountPath},
		{name: "dots in names are fine", expr: `mount.read('a..b/.c')`, want: "", calls: []string{"read a..b/.c call-1"}},
		{name: "no mount", expr: `mount.read('docs/a.md')`, noMnt: true, is: celenv.ErrNoMount,
			errHas: "mount is not configured for this task"},
		{name: "mount error", expr: `mount.write('x', input.text)`, fail: errDisk, is: errDisk,
			calls: []string{"write x call-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeMount{files: map[string]string{"docs/a.md": "hello"}, fail: tt.fail}
			var mnt celenv.Mount = m
			if tt.noMnt {
				mnt = nil
			}
			p := compile(t, celenv.ScopeAction, tt.expr)
			ctx := context.WithValue(context.Background(), ctxKey{}, "call-1")
			vars := map[string]any{"input": map[string]any{"name": "a.md", "text": "secret text", "evil": "../x"}}
			got, err := p.EvalWith(ctx, vars, mnt)
			if tt.is != nil {
				if !errors.Is(err, tt.is) {
					t.Fatalf("EvalWith error = %v, want %v", err, tt.is)
				}
				if strings.Contains(err.Error(), "secret text") || strings.Contains(err.Error(), "../x") {
					t.Errorf("error %q leaks a value", err)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("error %q does not contain %q", err, tt.errHas)
				}
			} else if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("EvalWith = %#v, %v; want %#v", got, err, tt.want)
			}
			if !reflect.DeepEqual(m.calls, tt.calls) {
				t.Errorf("mount calls = %q, want %q", m.calls, tt.calls)
			}
			if tt.files != nil && !reflect.DeepEqual(m.files, tt.files) {
				t.Errorf("files = %q, want %q", m.files, tt.files)
			}
		})
	}
}
