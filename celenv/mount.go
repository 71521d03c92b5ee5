package celenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Mount is the storage behind `mount.read(path)` and `mount.write(path, content)` in ScopeAction (SPEC §10).
// Paths are relative to the mount; celenv rejects any path with a ".." segment before calling it. The ctx is the
// one given to [Program.EvalWith]. Implementations must be safe for concurrent use.
type Mount interface {
	// Read returns the content stored at path.
	Read(ctx context.Context, path string) (string, error)
	// Write stores content at path and returns a reference to what was written (e.g. its location).
	Write(ctx context.Context, path, content string) (string, error)
}

// MountOpener is implemented by a Mount that can stream what it stores. Backends that send mounted files as they are
// (the openapi backend's files_from_mount) read through Open, so that their size bound stops the read instead of
// being checked after the whole file is in memory; a Mount without it cannot serve them. Paths are as for Read
// (CheckMountPath has refused ".." segments). The caller closes the reader.
type MountOpener interface {
	// Open returns a reader of the content stored at path. A missing path is an error wrapping fs.ErrNotExist.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
}

// CheckMountPath returns ErrMountPath when path has a ".." segment ("/" and "\" both separate segments): the
// check mount.read and mount.write apply, for backends that read a Mount themselves.
func CheckMountPath(path string) error {
	for seg := range strings.FieldsFuncSeq(path, isPathSeparator) {
		if seg == ".." {
			return ErrMountPath
		}
	}
	return nil
}

// ErrNoMount is the cause of an evaluation error when an expression calls mount.read or mount.write and the
// caller supplied no Mount.
var ErrNoMount = errors.New("mount is not configured for this task")

// ErrMountPath is the cause of an evaluation error when a mount path has a ".." segment.
var ErrMountPath = errors.New("mount path must not contain '..' segments")

const (
	fnMountRead  = "mount.read"
	fnMountWrite = "mount.write"
)

// mountFunctions are always declared in ScopeAction so expressions type-check at load whether or not the host
// configures a mount; the implementation is bound late, per evaluation, by the activation.
var mountFunctions = []cel.EnvOption{
	cel.Function(fnMountRead, cel.Overload("mount_read_string",
		[]*cel.Type{cel.StringType}, cel.StringType, cel.LateFunctionBinding())),
	cel.Function(fnMountWrite, cel.Overload("mount_write_string_string",
		[]*cel.Type{cel.StringType, cel.StringType}, cel.StringType, cel.LateFunctionBinding())),
}

// ResolveFunction supplies the late-bound mount functions; it makes the activation a cel FunctionActivation.
func (a *activation) ResolveFunction(name string) (functions.LateBoundOp, bool) {
	switch name {
	case fnMountRead:
		return a.mountRead, true
	case fnMountWrite:
		return a.mountWrite, true
	}
	return nil, false
}

func (a *activation) mountRead(_ string, args ...ref.Val) ref.Val {
	path, err := a.mountPath(args[0])
	if err != nil {
		return types.WrapErr(fmt.Errorf("%s: %w", fnMountRead, err))
	}
	out, err := a.mount.Read(a.ctx, path)
	if err != nil {
		return types.WrapErr(fmt.Errorf("%s: %w", fnMountRead, err))
	}
	return types.String(out)
}

func (a *activation) mountWrite(_ string, args ...ref.Val) ref.Val {
	path, err := a.mountPath(args[0])
	if err != nil {
		return types.WrapErr(fmt.Errorf("%s: %w", fnMountWrite, err))
	}
	content, _ := args[1].(types.String) // the overload's type guard admits only strings
	out, err := a.mount.Write(a.ctx, path, string(content))
	if err != nil {
		return types.WrapErr(fmt.Errorf("%s: %w", fnMountWrite, err))
	}
	return types.String(out)
}

func (a *activation) mountPath(arg ref.Val) (string, error) {
	if a.mount == nil {
		return "", ErrNoMount
	}
	path, _ := arg.(types.String)
	if err := CheckMountPath(string(path)); err != nil {
		return "", err
	}
	return string(path), nil
}

// isPathSeparator also splits on backslashes so a Windows-style "..\\x" cannot slip through a backend that
// treats them as separators.
func isPathSeparator(r rune) bool { return r == '/' || r == '\\' }
