package geojson

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// TestFeatureIDBeyondFloat64 is the "id":1e400 input:
// such an id passed validation and then failed in the handler (which
// reads it with strconv.ParseFloat). A Feature id that is a number beyond
// float64 range is a validation problem, as any other number beyond that
// range is (I-JSON, RFC 7493 section 2.2).
func TestFeatureIDBeyondFloat64(t *testing.T) {
	for _, id := range []string{"1e400", "-1e400", "17e308", "123456789e301"} {
		doc := `{"type":"Feature","id":` + id + `,"geometry":null,"properties":null}`
		err := Validate([]byte(doc), Options{})
		var verr *ValidationError
		if !errors.As(err, &verr) || len(verr.Violations) != 1 ||
			verr.Violations[0].Rule != RuleNumberTooLarge || verr.Violations[0].Pointer != "/id" {
			t.Errorf("id %s: %v, want one %s problem at /id", id, err, RuleNumberTooLarge)
		}
		if _, err := decode([]byte(doc), Options{}); err == nil {
			t.Errorf("id %s: DecodeDocument accepts it", id)
		}
	}
	// Numbers within range are kept exactly as written, including those a
	// float64 rounds (large integer ids) and those that underflow to 0,
	// which strconv.ParseFloat reads without error.
	for _, id := range []string{"0", "-1", "1.5e308", "12345678901234567890123", "1e-400", "4.9e-324"} {
		doc := `{"type":"Feature","id":` + id + `,"geometry":null,"properties":null}`
		fs, err := decode([]byte(doc), Options{})
		if err != nil {
			t.Errorf("id %s: %v", id, err)
			continue
		}
		if got, ok := fs[0].ID.(json.Number); !ok || string(got) != id {
			t.Errorf("id %s: decoded as %#v", id, fs[0].ID)
		}
		if _, err := strconv.ParseFloat(id, 64); err != nil {
			t.Errorf("id %s is accepted but strconv.ParseFloat fails: %v", id, err)
		}
	}
}
