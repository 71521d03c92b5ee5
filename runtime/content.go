package runtime

// The types of Content blocks (MCP 2025-11-25).
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource" // an embedded resource
)

// Content is one block of a tool result as an MCP server sent it, kept in order: text, an image or audio clip
// (base64 Data with its MIMEType), a link to a resource, or an embedded resource. Fields that do not belong to
// its Type are empty.
type Content struct {
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// Data is the base64 data of an image or audio block.
	Data     string `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	// URI, Name, Title, Description and Size describe a resource link.
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Resource is an embedded resource's contents.
	Resource *ResourceContents `json:"resource,omitempty"`
	// Annotations and Meta are the block's annotations and _meta, as sent.
	Annotations map[string]any `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ResourceContents is an embedded resource: its text or its base64 Blob.
type ResourceContents struct {
	URI      string         `json:"uri"`
	MIMEType string         `json:"mimeType,omitempty"`
	Text     string         `json:"text,omitempty"`
	Blob     string         `json:"blob,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}
