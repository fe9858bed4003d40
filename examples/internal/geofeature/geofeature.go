// Package geofeature prepares GeoJSON Features for delivery with the
// paired sender, package github.com/geoidem/geoidem/client:
// [StampObservationTime] sets a Feature's observation_time once, when it is
// ingested, and returns the bytes every attempt sends; [Key] derives a
// stable idempotency key from the feature as read; [NewDelivery] does both.
//
// What a receiver can rely on: observation_time is stamped once per event,
// before its first attempt (a feature that already has one keeps it), and
// is part of the bytes every attempt sends. Through a [client.Outbox] (as
// the examples/sender command uses) those bytes are journaled before the
// first attempt, so a re-run that stamps anew, a resumed crash and a
// re-drive of the dead letter all send the first stamp, under the first
// key; a bare [client.Sender] keeps it across the attempts of one
// [client.Sender.Deliver],
// and a re-drive sends the dead letter's bytes, stamp included. A re-run
// without the journal does stamp anew, but sends the new stamp under the
// first key: the receiver keeps the first stamp and answers the new one
// 422 key-reused, which an Outbox reports as [client.ErrSentEarlier], never
// as a permanent failure. The stamp the receiver holds is therefore always
// the first one sent, journal or not. So the time orders the observations
// of a feature as the sender first saw them, whatever order the deliveries
// arrive in: a receiver keeps the newest per feature id with package
// github.com/geoidem/geoidem/newest (examples/ingest does, on every
// store). The time is the sender's clock at ingestion, not a sequence
// number: two senders with skewed clocks order their observations by those
// clocks.
package geofeature

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/geoidem/geoidem/client"
)

// ObservationTimeProperty is the Feature property that records when the
// sender ingested the observation.
const ObservationTimeProperty = "observation_time"

// ContentType is the media type of GeoJSON (RFC 7946).
const ContentType = "application/geo+json"

// ErrNotFeature reports JSON that is not a GeoJSON Feature object: not an
// object, no "type": "Feature", duplicate top-level members, or
// "properties" that is neither an object nor null.
var ErrNotFeature = errors.New("geofeature: not a GeoJSON Feature")

// member is one member of a JSON object, in document order.
type member struct {
	name  string
	value json.RawMessage
}

// StampObservationTime returns the bytes to deliver for a GeoJSON Feature:
// the feature, compacted, with its "observation_time" property set to now
// (RFC 3339, UTC, nanoseconds) if it has none. A feature that already has
// one keeps it, whatever its value. Member order and every other value are
// kept as they were.
//
// Call it once, when the feature is ingested, and send the result on every
// attempt: retries then carry the same observation time and the same bytes,
// as the receiver's idempotency fingerprint requires, and a receiver may
// order the updates of one feature id by it (see "What a receiver can rely
// on" in the package documentation). Calling it again on its own output
// changes nothing.
func StampObservationTime(feature []byte, now time.Time) ([]byte, error) {
	members, err := parseFeature(feature)
	if err != nil {
		return nil, err
	}
	stamp, err := json.Marshal(now.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return nil, err
	}
	props := -1
	for i, m := range members {
		if m.name == "properties" {
			props = i
		}
	}
	switch {
	case props < 0:
		members = append(members, member{"properties", objectJSON([]member{{ObservationTimeProperty, stamp}})})
	case string(members[props].value) == "null":
		members[props].value = objectJSON([]member{{ObservationTimeProperty, stamp}})
	default:
		pm, err := parseObject(members[props].value)
		if err != nil {
			return nil, fmt.Errorf("%w: properties: %w", ErrNotFeature, err)
		}
		has := false
		for _, m := range pm {
			has = has || m.name == ObservationTimeProperty
		}
		if !has {
			members[props].value = objectJSON(append(pm, member{ObservationTimeProperty, stamp}))
		}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, objectJSON(members)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Key derives a stable idempotency key from a GeoJSON Feature as it
// was read, before [StampObservationTime]: the lowercase hexadecimal
// SHA-256 of the feature's compact JSON (insignificant whitespace removed;
// member order kept). The same source feature gives the same key in every
// run and whatever file layout (FeatureCollection or NDJSON) carried it.
//
// The feature's "id" is deliberately not the key: an id names a feature,
// not one observation of it, so two observations of the same feature would
// share a key and the second would be refused as key reuse. A re-run that
// stamps a new observation_time onto an unstamped source feature keeps the
// key but changes the payload, and the geoidem middleware answers that 422
// (key reused with another payload) rather than applying it twice: the
// event was sent earlier. A [client.Outbox] sends the stamped bytes its journal
// holds, and reports that answer, when its journal no longer holds them,
// as [client.ErrSentEarlier], not as a permanent failure; a bare
// [client.Sender] reports it as [client.ErrPermanent]. To re-send safely later, send the stamped bytes
// (from the journal or the dead-letter sink), whose key and payload are
// both unchanged.
func Key(feature []byte) (string, error) {
	if _, err := parseFeature(feature); err != nil {
		return "", err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, feature); err != nil {
		return "", err
	}
	sum := sha256.Sum256(c.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// NewDelivery returns the delivery of one GeoJSON Feature to url:
// its key from [Key], its body from [StampObservationTime] with now,
// and the content type application/geo+json.
func NewDelivery(url string, feature []byte, now time.Time) (client.Delivery, error) {
	key, err := Key(feature)
	if err != nil {
		return client.Delivery{}, err
	}
	body, err := StampObservationTime(feature, now)
	if err != nil {
		return client.Delivery{}, err
	}
	return client.Delivery{URL: url, Key: key, Body: body, ContentType: ContentType}, nil
}

// parseFeature checks that data is a Feature object and returns its
// members.
func parseFeature(data []byte) ([]member, error) {
	members, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFeature, err)
	}
	var typ string
	for _, m := range members {
		switch m.name {
		case "type":
			if json.Unmarshal(m.value, &typ) != nil {
				return nil, fmt.Errorf("%w: type is not a string", ErrNotFeature)
			}
		case "properties":
			if v := bytes.TrimSpace(m.value); len(v) == 0 || (v[0] != '{' && string(v) != "null") {
				return nil, fmt.Errorf("%w: properties is neither an object nor null", ErrNotFeature)
			}
		}
	}
	if typ != "Feature" {
		return nil, fmt.Errorf("%w: type is %q", ErrNotFeature, typ)
	}
	return members, nil
}

// parseObject splits a JSON object into its members, in order, rejecting
// duplicate names and trailing data.
func parseObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var members []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, fmt.Errorf("duplicate member %q", name)
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		members = append(members, member{name, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return members, nil
}

// objectJSON joins members into a JSON object.
func objectJSON(members []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // keep names as they were written
		_ = enc.Encode(m.name)   // a string always encodes
		b.Truncate(b.Len() - 1)  // the newline Encode adds
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
