package httpspec

import (
	"context"
	"errors"
	"net/http"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Exchange builds c with values, sends it with client and turns the response into a call's Result: the decoded
// body after path is the Output (see Output). ServerData holds "status" (int) and "headers" (map[string][]string, the response's http.Header) whenever
// a response arrived, and for a status ≥ 400 also "body", the raw body as text (at most ErrorBodyLimit bytes, see Do).
//
// Recoverable failures (see Build and Do) are returned in Result.Error with a nil error; a cancelled ctx returns
// an error wrapping context.Canceled; anything else wraps runtime.ErrUnrecoverable. limit bounds the response
// body as in Do.
func (c *Compiled) Exchange(ctx context.Context, client *http.Client, values interp.Resolver, limit int64,
	path *Path) (*runtime.Result, error) {
	x := &exchange{}
	req, err := c.Build(x.traced(ctx), values) // built on the traced context, the request is not copied to trace it
	if err != nil {
		return fail(err)
	}
	res := &runtime.Result{BytesOut: max(req.ContentLength, 0)}
	resp, err := x.do(ctx, client, req, limit)
	if resp != nil {
		res.BytesIn = resp.Size
		// The plain map type, not http.Header, so that generic walkers (the root's secret scrubbing) see it.
		res.ServerData = map[string]any{"status": resp.Status, "headers": map[string][]string(resp.Header)}
	}
	if err == nil {
		res.Output = Output(resp.Body, path)
	}
	if err != nil {
		rerr := Recoverable(err)
		if rerr == nil {
			return nil, err
		}
		if resp != nil && resp.Status >= 400 {
			res.ServerData["body"] = Excerpt(resp.Raw, ErrorBodyLimit)
		}
		res.Error = rerr
	}
	return res, nil
}

// Recoverable returns the *runtime.Error err carries when err is recoverable: it is, or wraps, a *runtime.Error
// and does not wrap runtime.ErrUnrecoverable. It returns nil otherwise.
func Recoverable(err error) *runtime.Error {
	var rerr *runtime.Error
	if errors.Is(err, runtime.ErrUnrecoverable) || !errors.As(err, &rerr) {
		return nil
	}
	return rerr
}

// fail puts a recoverable error into a Result and passes any other error through.
func fail(err error) (*runtime.Result, error) {
	if rerr := Recoverable(err); rerr != nil {
		return runtime.Fail(rerr), nil
	}
	return nil, err
}
