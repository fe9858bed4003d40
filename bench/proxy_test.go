package main

import (
	"strings"
	"testing"
)

// TestProxySection runs section 12 alone in the tiny mode: both proxies in
// front of the aiohttp receiver, at 1 and 64 clients, each answered 201
// every time, with their rows and goals in the report.
func TestProxySection(t *testing.T) {
	md, _ := runSection(t, "proxy")
	for _, want := range []string{"## 12. geoidem proxy against httputil.ReverseProxy", "| 1 | httputil.ReverseProxy |", "| 1 | geoidem proxy |",
		"| 64 | httputil.ReverseProxy |", "| 64 | geoidem proxy |", "geoidem proxy's time per request over httputil.ReverseProxy's, 64 client(s)"} {
		if !strings.Contains(md, want) {
			t.Errorf("REPORT.md lacks %q\n%s", want, md)
		}
	}
}
