package adminhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
)

// fixed is an Admin that answers every key with one entry and Summarize
// with one summary.
type fixed struct {
	entry   adminhttp.Entry
	summary adminhttp.Summary
}

func (f fixed) Inspect(context.Context, string) (adminhttp.Entry, error) { return f.entry, nil }
func (f fixed) Free(context.Context, string, bool) (adminhttp.Entry, error) {
	return f.entry, adminhttp.ErrLeaseRunning
}
func (f fixed) Forget(context.Context, string) (adminhttp.Entry, error) { return f.entry, nil }
func (f fixed) Summarize(context.Context) (adminhttp.Summary, error)    { return f.summary, nil }

// wireCases are entries and summaries with the exact bytes the handler
// answers for them. The bytes are the admin HTTP API: operators' scripts
// and the geoidem command of other versions read them, so they must not
// change.
var wireCases = []struct {
	name    string
	entry   adminhttp.Entry
	summary adminhttp.Summary
	inspect string // GET /inspect
	sum     string // GET /summary
}{
	{
		name: "completed",
		entry: adminhttp.Entry{
			State:       keystore.Completed,
			Fingerprint: keystore.Fingerprint{0: 0xab, 31: 0x01},
			Token:       42,
			Record: record.Append(nil, record.Record{StatusCode: 201,
				Header: http.Header{"Content-Type": {"application/geo+json"}}, Body: []byte(`{"id":"f1"}`)}),
			RetentionRemaining: 90 * time.Minute,
		},
		summary: adminhttp.Summary{InFlight: 3, LeaseRunOut: 1, Completed: 7, Bytes: 4096,
			Oldest: "POST /features\x00k1", OldestState: keystore.InFlight, OldestRemaining: -1500 * time.Millisecond},
		inspect: `{"entry":{"state":"completed","fingerprint":"ab00000000000000000000000000000000000000000000000000000000000001","token":42,"status":201,"header":{"Content-Type":["application/geo+json"]},"body":"eyJpZCI6ImYxIn0=","retention_remaining_ns":5400000000000}}` + "\n",
		sum:     `{"summary":{"in_flight":3,"lease_run_out":1,"completed":7,"bytes":4096,"oldest":"POST /features\u0000k1","oldest_state":"in flight","oldest_remaining_ns":-1500000000}}` + "\n",
	},
	{
		name: "in flight, lease run out",
		entry: adminhttp.Entry{
			State:          keystore.InFlight,
			Fingerprint:    keystore.Fingerprint{1, 2, 3},
			Token:          7,
			LeaseRemaining: -2 * time.Second,
			LeaseRunOut:    true,
		},
		summary: adminhttp.Summary{},
		inspect: `{"entry":{"state":"in flight","fingerprint":"0102030000000000000000000000000000000000000000000000000000000000","token":7,"lease_remaining_ns":-2000000000,"lease_run_out":true}}` + "\n",
		sum:     `{"summary":{"in_flight":0,"lease_run_out":0,"completed":0,"bytes":0}}` + "\n",
	},
	{
		name:    "absent",
		entry:   adminhttp.Entry{State: keystore.Absent},
		summary: adminhttp.Summary{Completed: 1, Bytes: 10, Oldest: "k", OldestState: keystore.Completed, OldestRemaining: time.Hour},
		inspect: `{"entry":{"state":"absent"}}` + "\n",
		sum:     `{"summary":{"in_flight":0,"lease_run_out":0,"completed":1,"bytes":10,"oldest":"k","oldest_state":"completed","oldest_remaining_ns":3600000000000}}` + "\n",
	},
}

// The handler answers an Entry and a Summary with exactly the bytes of
// wireCases, a refusal included, and the Client reads them back as the
// same Entry and Summary.
func TestWireFormat(t *testing.T) {
	for _, c := range wireCases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(adminhttp.Handler(fixed{c.entry, c.summary}))
			defer srv.Close()
			get := func(method, route string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, srv.URL+route, nil)
				req.Header.Set(adminhttp.HeaderName, "1")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, string(b)
			}
			if code, got := get(http.MethodGet, "/inspect?key=k"); code != http.StatusOK || got != c.inspect {
				t.Errorf("GET /inspect: %d\n%s\nwant 200\n%s", code, got, c.inspect)
			}
			if code, got := get(http.MethodGet, "/summary"); code != http.StatusOK || got != c.sum {
				t.Errorf("GET /summary: %d\n%s\nwant 200\n%s", code, got, c.sum)
			}
			wantRefusal := c.inspect[:len(c.inspect)-2] + `,"error":"lease-running","message":"adminhttp: the key is in flight and its lease is still running"}` + "\n"
			if code, got := get(http.MethodPost, "/free?key=k"); code != http.StatusConflict || got != wantRefusal {
				t.Errorf("POST /free: %d\n%s\nwant 409\n%s", code, got, wantRefusal)
			}

			cl := &adminhttp.Client{URL: srv.URL}
			e, err := cl.Inspect(t.Context(), "k")
			if err != nil || !reflect.DeepEqual(e, c.entry) {
				t.Errorf("Client.Inspect = %+v, %v\nwant %+v", e, err, c.entry)
			}
			e, err = cl.Free(t.Context(), "k", false)
			if err != adminhttp.ErrLeaseRunning || !reflect.DeepEqual(e, c.entry) {
				t.Errorf("Client.Free = %+v, %v\nwant %+v, ErrLeaseRunning", e, err, c.entry)
			}
			s, err := cl.Summarize(t.Context())
			if err != nil || s != c.summary {
				t.Errorf("Client.Summarize = %+v, %v\nwant %+v", s, err, c.summary)
			}
		})
	}
}

// An Entry and a Summary marshal to the bytes the handler answers inside
// "entry" and "summary", and unmarshal back to themselves.
func TestMarshalJSON(t *testing.T) {
	for _, c := range wireCases {
		wantEntry := strings.TrimSuffix(strings.TrimPrefix(c.inspect, `{"entry":`), "}\n")
		b, err := json.Marshal(c.entry)
		if err != nil || string(b) != wantEntry {
			t.Errorf("%s: json.Marshal(Entry) = %s, %v\nwant %s", c.name, b, err, wantEntry)
		}
		var e adminhttp.Entry
		if err := json.Unmarshal(b, &e); err != nil || !reflect.DeepEqual(e, c.entry) {
			t.Errorf("%s: json.Unmarshal(%s) = %+v, %v\nwant %+v", c.name, b, e, err, c.entry)
		}
		wantSummary := strings.TrimSuffix(strings.TrimPrefix(c.sum, `{"summary":`), "}\n")
		b, err = json.Marshal(c.summary)
		if err != nil || string(b) != wantSummary {
			t.Errorf("%s: json.Marshal(Summary) = %s, %v\nwant %s", c.name, b, err, wantSummary)
		}
		var s adminhttp.Summary
		if err := json.Unmarshal(b, &s); err != nil || s != c.summary {
			t.Errorf("%s: json.Unmarshal(%s) = %+v, %v\nwant %+v", c.name, b, s, err, c.summary)
		}
	}
	for _, bad := range []string{`{"state":"gone"}`, `{"state":"completed","fingerprint":"abc"}`, `{"state":"in flight","fingerprint":"zz00000000000000000000000000000000000000000000000000000000000000"}`} {
		var e adminhttp.Entry
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("json.Unmarshal(%s) into an Entry: %+v, want an error", bad, e)
		}
	}
	var s adminhttp.Summary
	if err := json.Unmarshal([]byte(`{"in_flight":1,"oldest":"k","oldest_state":"gone"}`), &s); err == nil {
		t.Errorf("json.Unmarshal of an unknown oldest_state into a Summary: %+v, want an error", s)
	}
}
