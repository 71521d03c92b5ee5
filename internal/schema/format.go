package schema

import "github.com/xeipuuv/gojsonschema"

// stringFormat applies a format checker to strings only: JSON Schema's format keyword constrains strings and
// ignores every other type (draft-07 §7.1), but gojsonschema's checkers reject anything that is not a string, so
// {format: email} refused the number 12.
type stringFormat struct{ gojsonschema.FormatChecker }

// IsFormat passes any non-string and checks strings with the wrapped checker.
func (f stringFormat) IsFormat(v any) bool {
	if _, ok := v.(string); !ok {
		return true
	}
	return f.FormatChecker.IsFormat(v)
}

// init re-registers gojsonschema's built-in formats (its FormatCheckers table, v1.2.0) as string-only; the
// checkers are gojsonschema's own. Registration at init is the only write to that global table.
func init() {
	for name, c := range map[string]gojsonschema.FormatChecker{
		"date": gojsonschema.DateFormatChecker{}, "time": gojsonschema.TimeFormatChecker{},
		"date-time": gojsonschema.DateTimeFormatChecker{}, "hostname": gojsonschema.HostnameFormatChecker{},
		"email": gojsonschema.EmailFormatChecker{}, "idn-email": gojsonschema.EmailFormatChecker{},
		"ipv4": gojsonschema.IPV4FormatChecker{}, "ipv6": gojsonschema.IPV6FormatChecker{},
		"uri": gojsonschema.URIFormatChecker{}, "uri-reference": gojsonschema.URIReferenceFormatChecker{},
		"iri": gojsonschema.URIFormatChecker{}, "iri-reference": gojsonschema.URIReferenceFormatChecker{},
		"uri-template": gojsonschema.URITemplateFormatChecker{}, "uuid": gojsonschema.UUIDFormatChecker{},
		"regex": gojsonschema.RegexFormatChecker{}, "json-pointer": gojsonschema.JSONPointerFormatChecker{},
		"relative-json-pointer": gojsonschema.RelativeJSONPointerFormatChecker{},
	} {
		gojsonschema.FormatCheckers.Add(name, stringFormat{c})
	}
}
