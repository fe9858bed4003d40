package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/geoidem/geoidem/keystore"
)

// repository stores features. upsert writes fs and returns the response to
// send, rec; a repository in the key store's own database records rec as the
// key's response inside the transaction of its write, and marks the
// request's keystore.Hold completed.
type repository interface {
	upsert(ctx context.Context, fs []feature, rec keystore.Record) (keystore.Record, error)
	get(ctx context.Context, id string) (json.RawMessage, bool, error)
	writes(ctx context.Context) (map[string]int, error)
}

// feature is one GeoJSON Feature as the ingest service stores it: its id
// and its raw JSON (and, for PostGIS, its geometry's raw JSON).
type feature struct {
	ID       string
	Raw      json.RawMessage
	Geometry json.RawMessage
}

// errNoID is answered 422: a feature without an id cannot be upserted.
var errNoID = errors.New("every feature needs an \"id\" to be upserted by")

// parseFeatures returns the features of a Feature or FeatureCollection. The
// body has already been validated as GeoJSON when a validator is in front;
// this only extracts what the service stores.
func parseFeatures(body []byte) ([]feature, error) {
	var doc struct {
		Type     string            `json:"type"`
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raws := doc.Features
	switch doc.Type {
	case "Feature":
		raws = []json.RawMessage{body}
	case "FeatureCollection":
	default:
		return nil, fmt.Errorf("type %q: want a Feature or a FeatureCollection", doc.Type)
	}
	out := make([]feature, 0, len(raws))
	for i, raw := range raws {
		var f struct {
			ID       json.RawMessage `json:"id"`
			Geometry json.RawMessage `json:"geometry"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("feature %d: %w", i, err)
		}
		id, err := featureID(f.ID)
		if err != nil {
			return nil, fmt.Errorf("feature %d: %w", i, err)
		}
		out = append(out, feature{ID: id, Raw: bytes.TrimSpace(raw), Geometry: f.Geometry})
	}
	return out, nil
}

// featureID returns a feature's id as text: a string as it is, a number in
// its JSON spelling.
func featureID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errNoID
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s == "" {
			return "", errNoID
		}
		return s, nil
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
		return "", errNoID
	}
	return string(raw), nil
}

// memFeatures keeps features in process: the repository of the memory and
// Redis modes. Its writes are idempotent per stored key: a request whose
// key already wrote its features (its record was then lost, say to a Redis
// outage between the write and the record, and a retry ran the handler
// again after the lease) does not write them again. That is the
// "idempotent handler writes" that make a store failure after the work,
// or a Redis failover, harmless.
type memFeatures struct {
	mu      sync.RWMutex
	m       map[string]json.RawMessage
	n       map[string]int      // writes per id
	applied map[string]struct{} // stored keys whose features were written
}

func newMemFeatures() *memFeatures {
	return &memFeatures{m: map[string]json.RawMessage{}, n: map[string]int{}, applied: map[string]struct{}{}}
}

func (s *memFeatures) writes(context.Context) (map[string]int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.n), nil
}

func (s *memFeatures) upsert(ctx context.Context, fs []feature, rec keystore.Record) (keystore.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hold, ok := keystore.HoldFromContext(ctx); ok {
		if _, done := s.applied[hold.Key]; done {
			return rec, nil // this request's features are already written
		}
		s.applied[hold.Key] = struct{}{}
	}
	for _, f := range fs {
		s.m[f.ID] = append(json.RawMessage(nil), f.Raw...)
		s.n[f.ID]++
	}
	pauseAfterWrite(ctx)
	return rec, nil
}

func (s *memFeatures) get(_ context.Context, id string) (json.RawMessage, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.m[id]
	return f, ok, nil
}
