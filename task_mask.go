package tool

import (
	"context"
	"errors"
	"log/slog"

	"github.com/commonagents-go/tool/internal/redact"
)

// Every channel a task writes to masks its secrets (SPEC §12.2): results and facts through the call's scrubbing
// (task_call.go, task_call_secrets.go), log lines through logger, and what other parties hand the task — a
// backend's or a receiver's facts, a Store's errors — through external, in their encoded forms too.

// logger is the host's logger behind a handler that masks the task's secrets, in every form they are known to
// take, in each record: message, attributes, groups. Every log line about a task goes through it, and so does
// every line of its backends and receivers. The task's secrets may grow (an auth token, a secret argument):
// the handler masks what the set holds when the line is written.
func (t *Task) logger() *slog.Logger {
	return slog.New(redact.Handler(t.tool.opts.logger.Handler(), t.secrets))
}

// external masks the task's secrets and their encoded forms in fact data another party reported; data is never
// modified.
func (t *Task) external(data map[string]any) map[string]any {
	out, _ := t.secrets.EncodedValue(data).(map[string]any)
	return out
}

// observeExternal is observe for facts another party reported.
func (t *Task) observeExternal(ctx context.Context, name string, data map[string]any) {
	t.observe(ctx, name, "", t.external(data))
}

// startErrorSentinels are the errors a host may test a failed NewTask or RestoreTask for: masking keeps them.
var startErrorSentinels = []error{ErrUnrecoverable, ErrClosed, ErrNotFound, ErrTaskExpired, ErrTaskExists,
	ErrNotReindexed, context.Canceled, context.DeadlineExceeded}

// startFailed masks in err, from starting a task with cfg, the secrets that task would have known: the tool's
// and the values cfg binds to secret parameters. A Store's error can quote its connection string. A
// *ValidationError stays one, its problems masked.
func (t *Tool) startFailed(cfg TaskConfig, err error) error {
	if err == nil {
		return nil
	}
	secrets := t.secrets
	for name, v := range cfg.Capability.Bindings {
		if t.secretParams[name] {
			if secrets == t.secrets {
				secrets = t.secrets.Clone()
			}
			secrets.Add(textOf(v))
		}
	}
	var ve *ValidationError
	if errors.As(err, &ve) && ve == err {
		out := &ValidationError{Problems: append([]Problem(nil), ve.Problems...)}
		for i := range out.Problems {
			out.Problems[i].Detail = secrets.Encoded(out.Problems[i].Detail)
		}
		return out
	}
	return secrets.Error(err, startErrorSentinels...)
}
