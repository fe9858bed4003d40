package adminhttp

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// entryJSON is an Entry's JSON form.
type entryJSON struct {
	State              string        `json:"state"` // absent, in flight, completed, released
	Fingerprint        string        `json:"fingerprint,omitempty"`
	Token              uint64        `json:"token,omitempty"`
	LeaseRemaining     time.Duration `json:"lease_remaining_ns,omitempty"`
	LeaseRunOut        bool          `json:"lease_run_out,omitempty"`
	Status             int           `json:"status,omitempty"`
	Header             http.Header   `json:"header,omitempty"`
	Body               []byte        `json:"body,omitempty"`
	RetentionRemaining time.Duration `json:"retention_remaining_ns,omitempty"`
}

// summaryJSON is a Summary's JSON form.
type summaryJSON struct {
	InFlight        int64         `json:"in_flight"`
	LeaseRunOut     int64         `json:"lease_run_out"`
	Completed       int64         `json:"completed"`
	Bytes           int64         `json:"bytes"`
	Oldest          string        `json:"oldest,omitempty"`
	OldestState     string        `json:"oldest_state,omitempty"`
	OldestRemaining time.Duration `json:"oldest_remaining_ns,omitempty"`
}

// MarshalJSON encodes e as the admin API answers it (GET /inspect's
// "entry"), a field left out when it is zero:
//
//	state                   "absent", "in flight", "completed" or "released"
//	fingerprint             hexadecimal (in flight, completed)
//	token                   the token, a number
//	lease_remaining_ns      LeaseRemaining in nanoseconds (in flight)
//	lease_run_out           LeaseRunOut (in flight)
//	status, header, body    the recorded answer (completed): its status, its
//	                        header as an object of arrays, its body in base64
//	retention_remaining_ns  RetentionRemaining in nanoseconds (completed)
//
// A Record that is not the middleware's encoding is given as body alone,
// its bytes as they are, without status or header.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{State: e.State.String(), Token: uint64(e.Token)}
	if e.State != keystore.Absent && e.Fingerprint != (keystore.Fingerprint{}) {
		j.Fingerprint = hex.EncodeToString(e.Fingerprint[:])
	}
	switch e.State {
	case keystore.InFlight:
		j.LeaseRemaining, j.LeaseRunOut = e.LeaseRemaining, e.LeaseRunOut
	case keystore.Completed:
		j.RetentionRemaining = e.RetentionRemaining
		if rec, err := record.Decode(e.Record); err == nil {
			j.Status, j.Header, j.Body = rec.StatusCode, rec.Header, rec.Body
		} else {
			j.Body = e.Record // not the middleware's encoding: the bytes as they are, without a status
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes. The Record of a
// completed entry is the middleware's encoding of its status, header and
// body.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	st, err := parseState(j.State)
	if err != nil {
		return err
	}
	d := Entry{State: st, Token: keystore.Token(j.Token), LeaseRemaining: j.LeaseRemaining, LeaseRunOut: j.LeaseRunOut,
		RetentionRemaining: j.RetentionRemaining}
	if st == keystore.Completed {
		d.Record = record.Append(nil, record.Record{StatusCode: j.Status, Header: j.Header, Body: j.Body})
	}
	if j.Fingerprint != "" {
		fp, err := hex.DecodeString(j.Fingerprint)
		if err != nil || len(fp) != len(d.Fingerprint) {
			return fmt.Errorf("adminhttp: fingerprint %.80q is not %d bytes in hexadecimal", j.Fingerprint, len(d.Fingerprint))
		}
		copy(d.Fingerprint[:], fp)
	}
	*e = d
	return nil
}

// MarshalJSON encodes s as the admin API answers it (GET /summary's
// "summary"): in_flight, lease_run_out, completed and bytes, always; then,
// when there is an Oldest, oldest, oldest_state ("in flight" or
// "completed") and oldest_remaining_ns (OldestRemaining in nanoseconds).
func (s Summary) MarshalJSON() ([]byte, error) {
	j := summaryJSON{InFlight: s.InFlight, LeaseRunOut: s.LeaseRunOut, Completed: s.Completed, Bytes: s.Bytes,
		Oldest: s.Oldest, OldestRemaining: s.OldestRemaining}
	if s.Oldest != "" {
		j.OldestState = s.OldestState.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes; without oldest_state,
// OldestState is keystore.Absent.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	st := keystore.Absent
	if j.OldestState != "" {
		var err error
		if st, err = parseState(j.OldestState); err != nil {
			return err
		}
	}
	*s = Summary{InFlight: j.InFlight, LeaseRunOut: j.LeaseRunOut, Completed: j.Completed, Bytes: j.Bytes,
		Oldest: j.Oldest, OldestState: st, OldestRemaining: j.OldestRemaining}
	return nil
}

// parseState returns the keystore.State whose String is s.
func parseState(s string) (keystore.State, error) {
	for st := keystore.Absent; st <= keystore.Released; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("adminhttp: unknown state %q", s)
}
