package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/internal/geofeature"
)

// feature is one feature to deliver.
type feature struct {
	source   string // file:line or file:line#index, for messages
	delivery client.Delivery
	redrive  *client.DeadLetter // a dead letter to re-drive instead
}

// readInputs reads every file and returns its features, each with its key
// and its stamped body. The first feature with a given key fixes the body
// for every later one, so a duplicate in the input is a replay, not a
// conflict.
func readInputs(files []string, target string, now func() time.Time) ([]feature, error) {
	var out []feature
	bodies := make(map[string][]byte)
	for _, name := range files {
		data, err := readFile(name)
		if err != nil {
			return nil, err
		}
		raws, err := splitFeatures(name, data)
		if err != nil {
			return nil, err
		}
		for _, r := range raws {
			d, err := geofeature.NewDelivery(target, r.raw, now())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.source, err)
			}
			if b, ok := bodies[d.Key]; ok {
				d.Body = b
			} else {
				bodies[d.Key] = d.Body
			}
			out = append(out, feature{source: r.source, delivery: d})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no features in the input")
	}
	return out, nil
}

// readDeadLetters reads the dead letters to re-drive.
func readDeadLetters(name string) ([]feature, error) {
	data, err := readFile(name)
	if err != nil {
		return nil, err
	}
	dls, err := client.ReadDeadLetters(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(dls) == 0 {
		return nil, fmt.Errorf("%s: no dead letters", name)
	}
	out := make([]feature, len(dls))
	for i := range dls {
		out[i] = feature{source: fmt.Sprintf("%s: dead letter %d (key %s)", name, i+1, dls[i].Key), redrive: &dls[i]}
	}
	return out, nil
}

func readFile(name string) ([]byte, error) {
	if name == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("stdin: %w", err)
		}
		return data, nil
	}
	return os.ReadFile(name)
}

// rawFeature is one feature as read.
type rawFeature struct {
	source string
	raw    []byte
}

// splitFeatures splits a file's JSON values (one, or one per NDJSON line)
// into features.
func splitFeatures(name string, data []byte) ([]rawFeature, error) {
	var out []rawFeature
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		offset := dec.InputOffset()
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		// The value starts at the first non-space byte after offset.
		line := 1 + bytes.Count(data[:offset], []byte("\n")) + bytes.Count(leadingSpace(data[offset:]), []byte("\n"))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		source := fmt.Sprintf("%s:%d", name, line)
		var head struct {
			Type     string            `json:"type"`
			Features []json.RawMessage `json:"features"`
		}
		if err := json.Unmarshal(v, &head); err != nil {
			return nil, fmt.Errorf("%s: not a GeoJSON object: %w", source, err)
		}
		switch head.Type {
		case "Feature":
			out = append(out, rawFeature{source, v})
		case "FeatureCollection":
			for i, f := range head.Features {
				out = append(out, rawFeature{fmt.Sprintf("%s#%d", source, i), f})
			}
		default:
			return nil, fmt.Errorf("%s: type %q: want a Feature or a FeatureCollection", source, head.Type)
		}
	}
}

func leadingSpace(b []byte) []byte {
	return b[:len(b)-len(bytes.TrimLeft(b, " \t\r\n"))]
}
