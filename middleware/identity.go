package middleware

import (
	"net/http"
	"strings"
)

// identity is what the middleware knows a request by, computed once, when
// the request arrives, by identify: the scope, the fingerprint, the stored
// key and the logs all read it, and nothing computes any of it again.
type identity struct {
	method string // r.Method in upper case
	host   string // the host of the ServeMux pattern that routed r; "" if none
	path   string // NormalizedPath(r)
	key    string // the Idempotency-Key, parsed (ParseKey)
	scope  string // Config.Scope(r); "" for the default scope, never built
	stored string // StoreKey(scope, key): what the store, the logs and the geoidem command see
}

// identify computes r's identity, its key being key (already parsed).
func (m *Middleware) identify(r *http.Request, key string) identity {
	id := identity{method: upperMethod(r.Method), host: patternHost(r.Pattern), path: NormalizedPath(r), key: key}
	if m.scope != nil {
		id.scope = m.scope(r)
		id.stored = StoreKey(id.scope, key)
	} else { // the default scope, without building its string
		id.stored = storeKey4(id.method, " ", id.host, id.path, key)
	}
	return id
}

// DefaultScope returns the scope Config.Scope defaults to: the method in
// upper case, a space, the host of the [http.ServeMux] pattern that routed
// r when that pattern names a host, and [NormalizedPath](r):
//
//	POST /features
//	POST a.example/orders
//
// It tells apart exactly what ServeMux routes apart, when the middleware
// wraps the handler of a route (mux.Handle(pattern, idem.Handler(h))): the
// method, whatever its case ("post" and "POST" reach a method-less
// pattern's handler alike, and are one scope), host patterns
// (a.example/orders and b.example/orders are two handlers, and two
// scopes, while a pattern without a host serves every host under one
// scope), and path segments (/a%2Fb is one segment, /a/b two). A
// middleware in front of the whole mux (idem.Handler(mux)) runs before
// the mux has chosen a route (r.Pattern is empty), and so does one behind
// another router: if that router routes by host, or by anything but the
// method and the path, set Config.Scope to a function that names the route
// the way the router tells routes apart.
//
// A custom Scope that adds the caller's identity builds on it:
//
//	Scope: func(r *http.Request) string { return tenantOf(r) + " " + middleware.DefaultScope(r) },
func DefaultScope(r *http.Request) string {
	return upperMethod(r.Method) + " " + patternHost(r.Pattern) + NormalizedPath(r)
}

// upperMethod returns method in upper case, without allocating when it is
// already.
func upperMethod(method string) string {
	for i := 0; i < len(method); i++ {
		if c := method[i]; 'a' <= c && c <= 'z' {
			return strings.ToUpper(method)
		}
	}
	return method
}

// patternHost returns the host part of a ServeMux pattern
// ("[METHOD ][HOST]/[PATH]"), "" when it has none.
func patternHost(pattern string) string {
	slash := strings.IndexByte(pattern, '/')
	if slash <= 0 {
		return ""
	}
	head := pattern[:slash]
	if i := strings.LastIndexAny(head, " \t"); i >= 0 {
		head = head[i+1:]
	}
	return head
}
