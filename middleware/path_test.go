package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/geoidem/geoidem/middleware"
)

func TestNormalizedPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/features", "/features"},
		{"/%66eatures", "/features"},
		{"/feature%73", "/features"},
		{"/%66%65atures", "/features"},
		{"/%66eature%73", "/features"},
		{"/%7euser/%7Euser/~user", "/~user/~user/~user"},                 // unreserved, either case of hex
		{"/a%2fb", "/a%2Fb"},                                             // a slash in a segment stays encoded, hex upper-cased
		{"/a%2Fb/c", "/a%2Fb/c"},                                         // and distinct from /a/b/c
		{"/a/b", "/a/b"},                                                 //
		{"/x%3a%40%21%24%26%27%28%29%2a%2B%2C%3B%3D", "/x:@!$&'()*+,;="}, // sub-delims, ':' and '@' route as themselves
		{"/a%20b", "/a%20b"},                                             // a space stays encoded
		{"/%e2%82%ac", "/%E2%82%AC"},                                     // bytes beyond ASCII stay encoded, upper-case hex
		{"/%25", "/%25"},                                                 // a percent sign stays encoded
		{"/%3f%23", "/%3F%23"},                                           // so do '?' and '#'
		{"/%2e/x", "/%2E/x"},                                             // an encoded dot segment is not cleaned like "."
		{"/%2E%2e/x", "/%2E%2E/x"},                                       //
		{"/a.b/%2e%2ejson", "/a.b/..json"},                               // dots inside a segment are plain
		{"/x/", "/x/"},                                                   // a trailing slash is a different route
		{"/", "/"},
	} {
		r := httptest.NewRequest(http.MethodPost, c.in, nil)
		if got := middleware.NormalizedPath(r); got != c.want {
			t.Errorf("NormalizedPath(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
