package kubernetesjob

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels and annotations every Job carries (its pod template too). Label values that are not valid label
// values (too long, odd characters) are replaced by a hash; the annotations always hold the values as they are.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelTask      = "tool.commonagents.info/task"
	LabelTool      = "tool.commonagents.info/tool"
	// LabelToolNamespace holds the manifest's namespace: with LabelTool it names the tool.
	LabelToolNamespace = "tool.commonagents.info/tool-namespace"
	LabelAction        = "tool.commonagents.info/action"
	LabelCall          = "tool.commonagents.info/call"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "commonagents-go-tool"
	// labelJobName is the label the Job controller puts on the pods of a Job.
	labelJobName = "batch.kubernetes.io/job-name"
)

// labelValue returns s when it is a valid label value, else "h" and a hash of s, so that distinct values stay
// distinct: Teardown finds a task's Jobs by this label.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:20])
}

// generateName turns an action name into a Job name prefix: a DNS label, short enough for the suffix the API
// server adds and for the pods' job-name label.
func generateName(action string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(action) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" || !('a' <= name[0] && name[0] <= 'z') {
		name = "job-" + name
	}
	return name + "-"
}

// The task state of this backend records the namespaces the task created Jobs in, so that Teardown after a host
// restart still finds them.
type stateDoc struct {
	Namespaces []string `json:"namespaces"`
}

func decodeState(data []byte) []string {
	var doc stateDoc
	if len(data) == 0 || json.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc.Namespaces
}

func encodeState(namespaces map[string]bool) []byte {
	doc := stateDoc{Namespaces: make([]string, 0, len(namespaces))}
	for ns := range namespaces {
		doc.Namespaces = append(doc.Namespaces, ns)
	}
	slices.Sort(doc.Namespaces)
	data, _ := json.Marshal(doc)
	return data
}
