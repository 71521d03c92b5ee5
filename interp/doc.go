// Package interp parses and renders the {token} templates of tool manifests (SPEC §4).
//
// A template is text with tokens such as {parameters.path}, {settings['github.token']}, {event.payload.items[0]}
// or {auth.github()}. Templates are parsed once, when a manifest is loaded, into an immutable form whose Render
// methods run on hot paths without parsing, regular expressions or reflection.
//
// Grammar: a token is '{' path '}' where path is a root followed by steps — .ident, ['key'], ["key"] or [index] —
// or the call auth.<provider>(). An ident matches [A-Za-z_][A-Za-z0-9_-]*. The roots are listed by Roots.
// "{{" and "}}" are literal braces; a '{' not followed by an identifier start and a lone '}' are literal text, so
// JSON-looking text such as {"a": 1} stays as written. An identifier after '{' that is not a root is an error with a
// did-you-mean suggestion: "{paramters.x}" is a typo, never text.
//
// Three compiled forms exist, one per kind of manifest field:
//   - Template: a string field; a field that is exactly one token keeps the value's JSON type (SPEC §4.3).
//   - Value: a JSON body whose string leaves are templates; rendered into a fresh Go value tree that is
//     JSON-encoded once, so no value can escape its JSON string.
//   - URL: a URL template split at parse time into authority, path, query and fragment so that values are escaped
//     for where they stand and can never change the scheme, host or port (SPEC §4.4, §12.1).
//
// All compiled forms are immutable and safe for concurrent use.
package interp
