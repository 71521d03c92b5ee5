package redact

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

const logSecret = `sk-LOG/se cret&"x"<y>`

type stringer struct{}

func (stringer) String() string { return "token " + logSecret }

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("from a LogValuer: " + logSecret) }

type plain struct{ URL string }

// Every part of a record that a handler writes is masked, in every encoding, for text and JSON handlers alike.
func TestHandlerMasksEveryPartOfARecord(t *testing.T) {
	t.Parallel()
	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var s Set
			s.Add(logSecret)
			var buf bytes.Buffer
			log := slog.New(Handler(newHandler(&buf), &s)).With("url", "http://h/"+url.PathEscape(logSecret)).
				WithGroup("call").With("query", "k="+url.QueryEscape(logSecret))
			log.Warn("message "+logSecret,
				"string", logSecret,
				"error", fmt.Errorf("wrapped: %w", errors.New(logSecret)),
				"stringer", stringer{},
				"struct", plain{URL: "http://h/" + logSecret},
				"pointer", &plain{URL: logSecret},
				"map", map[string]any{"k": []any{"x " + logSecret}},
				"header", map[string][]string{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(logSecret))}},
				"bytes", []byte(logSecret),
				"valuer", valuer{},
				slog.Group("outer", slog.Group("inner", "b64", base64.RawURLEncoding.EncodeToString([]byte(logSecret)))),
			)
			out := buf.String()
			for _, form := range append([]string{logSecret}, Encodings(logSecret)...) {
				if strings.Contains(out, form) {
					t.Errorf("%q leaked:\n%s", form, out)
				}
			}
			if n := strings.Count(out, Mask); n < 13 {
				t.Errorf("%d masks, want one per part at least (13):\n%s", n, out)
			}
		})
	}
}

// Attributes given to With before a secret joins the set are masked once it has.
func TestHandlerMasksAttrsOfSecretsAddedLater(t *testing.T) {
	t.Parallel()
	var s Set
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil), &s)).With("token", "tok-LATER-123")
	log.Info("before")
	s.AddToken("tok-LATER-123")
	log.Info("after")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "tok-LATER-123") || strings.Contains(lines[1], "tok-LATER-123") {
		t.Errorf("want the token shown before it was a secret and masked after:\n%s", buf.String())
	}
}

// A value that holds no secret is passed on as it is: an error stays itself, for errors.Is and errors.As.
func TestHandlerKeepsCleanValues(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add(logSecret)
	for _, v := range []any{errors.New("clean"), plain{URL: "x"}, &plain{URL: "x"}} {
		if got := s.logValue(slog.AnyValue(v)).Any(); got != v {
			t.Errorf("%#v became %#v", v, got)
		}
	}
}
