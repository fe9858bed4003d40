package redisstore

import (
	"net/http"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
)

// Completed entries written before the completing token was stored ('c' |
// fingerprint | record) are still replayed.
func TestParseLegacyCompletedEntry(t *testing.T) {
	fp := keystore.Fingerprint{7}
	rec := record.Record{StatusCode: 201, Header: http.Header{"A": {"b"}}, Body: []byte("legacy")}
	for _, v := range []string{
		"c" + string(fp[:]) + string(record.Append(nil, rec)),
		"d" + string(fp[:]) + "\x00\x00\x00\x00\x00\x00\x00\x09" + string(record.Append(nil, rec)),
	} {
		c, ok := parseClaim(v)
		if !ok || c.State != keystore.Completed || c.Fingerprint != fp || testkit.Decoded(c.Record).StatusCode != 201 || string(testkit.Decoded(c.Record).Body) != "legacy" {
			t.Errorf("parseClaim(%.1q…) = %+v, %v; want the completed record", v, c, ok)
		}
	}
}

// A key argument is an interface holding the key as a string, as go-redis
// needs it to be to read a Cluster's slot.
func TestKeysAreStrings(t *testing.T) {
	key := "geoidem:" + t.Name() + "{k}"
	e := newEval(claimScript, key, key+":fenced")
	if got, ok := e.args()[3].(string); !ok || got != key {
		t.Errorf("key argument %#v, want the string %q", e.args()[3], key)
	}
	if got, ok := e.args()[4].(string); !ok || got != key+":fenced" {
		t.Errorf("fence key argument %#v, want the string %q", e.args()[4], key+":fenced")
	}
	c := newSet(key, keystore.Fingerprint{1}, 2, "60000")
	if got, ok := c.a[1].(string); !ok || got != key {
		t.Errorf("SET key argument %#v, want the string %q", c.a[1], key)
	}
}

// newClaimSet builds the Redis key Store.RedisKey does, in the arguments'
// memory when it fits and on its own when it does not.
func TestNewClaimSetKey(t *testing.T) {
	s := &Store{prefix: "geoidem:test:"}
	for _, key := range []string{"", "k", strings.Repeat("a", 64), strings.Repeat("b", 200)} {
		c, rkey := newClaimSet(s.prefix, key)
		if want := s.RedisKey(key); rkey != want {
			t.Errorf("key of %d bytes: %q, want %q", len(key), rkey, want)
		}
		c.set(rkey, keystore.Fingerprint{1}, 2, "60000")
		if got, ok := c.a[1].(string); !ok || got != s.RedisKey(key) {
			t.Errorf("key of %d bytes: SET key argument %#v", len(key), c.a[1])
		}
	}
}
