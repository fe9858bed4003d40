package main

import (
	"hash/fnv"
	"net/http"

	"github.com/geoidem/geoidem/client"
)

// pathSpellings are request targets of one resource, /features: the same
// path for http.ServeMux (which routes the decoded path), five byte strings
// on the wire.
var pathSpellings = []string{"/features", "/%66eatures", "/feature%73", "/%66%65atures", "/%66eature%73"}

// spellPath is a client.Config.PrepareAttempt that sends attempt n of the
// delivery of key to spelling (h(key)+n-1) mod 5 of its path, when that
// path is /features: each retry of a delivery (and each re-send) reaches
// the receiver under another request target.
func spellPath(req *http.Request, a client.Attempt) error {
	if req.URL.Path != "/features" {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(a.Key))
	req.URL.RawPath = pathSpellings[(int(h.Sum32()%uint32(len(pathSpellings)))+a.Number-1)%len(pathSpellings)]
	if req.URL.RawPath == "/features" {
		req.URL.RawPath = ""
	}
	return nil
}
