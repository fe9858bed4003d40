package redisstore_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// goldenRecords are records with their encodings as this package stored
// them before the encoding moved to package keystore: data already in Redis
// must still be read, and compared by a repeated Complete, after an upgrade.
var goldenRecords = []struct {
	rec record.Record
	hex string
}{
	{
		record.Record{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}, "Link": {"</a>", "</b>"}, "Empty": {}}, Body: []byte(`{"id":1}`)},
		"9203030c436f6e74656e742d5479706501106170706c69636174696f6e2f6a736f6e05456d70747900044c696e6b02043c2f613e043c2f623e7b226964223a317d",
	},
	{record.Record{StatusCode: 204}, "980300"},
	{record.Record{StatusCode: 599, Header: http.Header{"X": {"\x00\xff"}}, Body: []byte{0x80, 0x80, 0x80}}, "ae09010158010200ff808080"},
}

// The value of a completed key: 'd' | fingerprint | token | record.
func completedValue(fp keystore.Fingerprint, token keystore.Token, enc []byte) string {
	v := []byte{'d'}
	v = append(v, fp[:]...)
	for i := 7; i >= 0; i-- {
		v = append(v, byte(token>>(8*i)))
	}
	return string(append(v, enc...))
}

func TestGoldenRecordsAreStoredAsBefore(t *testing.T) {
	t.Parallel()
	client := standaloneClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	fp := keystore.Fingerprint{9}
	for _, g := range goldenRecords {
		key := keystoretest.Key(t)
		c, err := newClaim(ctx, s, key, fp, time.Minute)
		if err != nil || !c.Acquired {
			t.Fatalf("Claim: %v %v", c.State, err)
		}
		if err := s.Complete(ctx, key, c.Token, encode(g.rec), time.Hour); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		v, err := client.Get(ctx, s.RedisKey(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hex.DecodeString(g.hex)
		if v != completedValue(fp, c.Token, want) {
			t.Errorf("Complete(%+v) stored %x, want 'd' | fingerprint | token | %s", g.rec, v, g.hex)
		}
	}
}

func TestGoldenRecordsAreReadAsBefore(t *testing.T) {
	t.Parallel()
	client := standaloneClient(t)
	s := newStore(t, client, client, redisstore.Config{})
	ctx := t.Context()
	fp := keystore.Fingerprint{9}
	const token = keystore.Token(0x0102030405060708)
	for _, g := range goldenRecords {
		enc, _ := hex.DecodeString(g.hex)
		key := keystoretest.Key(t)
		if err := client.Set(ctx, s.RedisKey(key), completedValue(fp, token, enc), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		c, err := newClaim(ctx, s, key, keystore.Fingerprint{1}, time.Minute)
		got, derr := record.Decode(c.Record)
		if err != nil || c.State != keystore.Completed || c.Fingerprint != fp || derr != nil || !reflect.DeepEqual(got, g.rec) || !bytes.Equal(c.Record, enc) {
			t.Errorf("Claim of the stored %s = %v %x (%+v, %v), %v; want completed with the stored bytes, %+v", g.hex, c.State, c.Record, got, derr, err, g.rec)
		}
		// A Complete repeated by the completing token with an equal record
		// compares its encoding with the stored one.
		if err := s.Complete(ctx, key, token, encode(g.rec), time.Hour); err != nil {
			t.Errorf("repeated Complete of the stored %s: %v", g.hex, err)
		}
	}
}
