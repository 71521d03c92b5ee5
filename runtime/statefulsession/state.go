package statefulsession

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// stateVersion is the version of the persisted form written by encodeState.
const stateVersion = 1

// persisted is the task state described in the package documentation.
type persisted struct {
	Version  int      `json:"version"`
	Sessions []record `json:"sessions"`
}

type record struct {
	Key       string         `json:"key"`
	CreatedAt time.Time      `json:"created_at"`
	Values    map[string]any `json:"values"`
}

func encodeState(recs []record) ([]byte, error) {
	if recs == nil {
		recs = []record{}
	}
	return json.Marshal(persisted{Version: stateVersion, Sessions: recs})
}

// decodeState reads what encodeState wrote; empty data is no sessions.
func decodeState(data []byte) ([]record, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var p persisted
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("decoding stateful_session task state: %w", err)
	}
	if p.Version != stateVersion {
		return nil, fmt.Errorf("stateful_session task state has version %d, want %d", p.Version, stateVersion)
	}
	return p.Sessions, nil
}
