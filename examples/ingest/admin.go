package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/keystore/adminhttp"
)

// adminFlag is -admin-addr: a loopback address on which the service serves
// its key store's adminhttp.Admin (keystore/adminhttp), so that
// `geoidem keys … -store http://ADDR` can inspect and free the keys of the
// memory store, which lives in this process. Never the public listener: it
// reads recorded answers and frees keys.
type adminFlag struct{ addr *string }

func newAdminFlag(fl *flag.FlagSet) adminFlag {
	return adminFlag{fl.String("admin-addr", "", "serve the key store's admin API (geoidem keys -store http://ADDR) on this loopback address, e.g. 127.0.0.1:9090; never a public one")}
}

// check refuses an admin address that is not loopback.
func (a adminFlag) check() error {
	if *a.addr == "" {
		return nil
	}
	return loopbackOnly(*a.addr)
}

// start listens on the admin address, if one was given, and serves there
// until the returned stop is called. It refuses an address that is not
// loopback.
func (a adminFlag) start(svc *service.Service, stdout io.Writer) (stop func(), err error) {
	if *a.addr == "" {
		return func() {}, nil
	}
	if err := loopbackOnly(*a.addr); err != nil {
		return nil, err
	}
	admin, ok := svc.Admin()
	if !ok {
		return nil, errors.New("-admin-addr: the key store has no admin API")
	}
	ln, err := net.Listen("tcp", *a.addr)
	if err != nil {
		return nil, fmt.Errorf("-admin-addr: %w", err)
	}
	srv := &http.Server{Handler: adminhttp.Handler(admin), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(stdout, "ingest: admin on http://%s (loopback only)\n", ln.Addr())
	return func() { _ = srv.Close() }, nil
}

// loopbackOnly refuses an address whose host is not a loopback IP address
// or localhost (an empty host would listen on every interface).
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-admin-addr %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-admin-addr %q: not a loopback address; the admin API reads recorded answers and frees keys, so it listens on loopback only", addr)
	}
	return nil
}
