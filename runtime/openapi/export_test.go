package openapi

// ForgetDocuments empties the process-wide document cache, so a benchmark can measure a cold Load.
func ForgetDocuments() { documents.Clear() }
