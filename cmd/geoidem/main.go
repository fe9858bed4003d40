// Command geoidem makes a receiver in any language exactly-once, checks
// receivers against the contract, and operates their keys, from outside Go.
//
//	geoidem proxy -upstream URL [-addr 127.0.0.1:8080] [-store STORE] [flags]
//	geoidem contract -url URL [-path /features] [flags]
//	geoidem keys get|release|forget|stats -store STORE [flags] …
//	geoidem version
//
// proxy serves, in front of a receiver written in anything, what
// examples/ingest serves in front of its own handler: the front door
// (frontdoor.New: connections bounded under contention only, slow bodies
// cut off, work admitted once its body has arrived, known senders, the
// client behind -trusted-proxies; its decisions in /metrics), Standard Webhooks
// verification (-webhook-secret, -webhook-public-key), the idempotency
// middleware on the key store -store names, and RFC 7946 validation, so
// that an invalid geometry never reaches the receiver. Each new key is
// forwarded once to -upstream, with its Idempotency-Key, and the answer is
// recorded and replayed to every retry; GET /metrics and GET /healthz are
// the proxy's own. A request the upstream never received (no connection) is
// answered 503 with Retry-After and its key released. A request sent whose
// answer cannot be trusted (a reset, a timeout, a 502 or 504 from the
// upstream's own proxy) may have run: its key is held as uncertain, every
// retry answered 503 upstream-uncertain with a Retry-After that is the
// hold's end, logged and counted (geoidem_upstream_uncertain_held_total),
// until an operator checks the receiver and runs `geoidem keys release`
// (shown by `geoidem keys get`), or -uncertain-hold ends. An upstream that
// deduplicates by the forwarded Idempotency-Key may take -uncertain-hold 0:
// the key is then released at once. docs/wire.md is the whole contract on
// the wire.
//
// version prints the version the release build set, else the module
// version and VCS revision of the build, the Go version and the platform.
//
// contract runs every rule of the contract suite (package
// middleware/contracttest) against a running receiver written in any
// language, with the paired sender, and prints one line per rule: pass,
// fail with the answers that broke it, or not applicable; then a summary.
// It exits 0 when every rule holds, 1 when one fails, 2 on a usage error or
// an unreachable receiver. -json prints the report as JSON, for CI.
//
// keys reads and repairs the idempotency keys of a key store, computed from
// a scope and a key exactly as the middleware stores them (see
// middleware.StoreKey); -store takes the same forms as examples/ingest:
// redis://host:port/db (or a comma-separated Cluster list), postgres://…,
// or the http:// address of a memory store's admin listener
// (keystore/adminhttp). Its subcommands:
//
//	get -scope SCOPE KEY      the entry's state: absent, in flight (lease left, or run out),
//	                          completed (status, headers, body size, retention left), or
//	                          uncertain (held by geoidem proxy: the upstream may have run it)
//	release -scope SCOPE KEY  frees a key stuck in flight, only once its lease has run out
//	                          unless -force, or a key geoidem proxy holds as uncertain
//	                          (its outcome unknown); never touches another completed record
//	forget -scope SCOPE KEY   deletes a completed record, after asking (-yes skips the question)
//	stats                     entries in flight and completed, bytes, oldest entry
//
// The middleware's default scope is the method and path: "POST /features".
// keys exits 0 when it did what was asked, 1 when it refused (a lease still
// running, a completed record to release, an answer other than yes) or
// found no entry for the key (it then says to check -scope and -store: a
// key looked up in another scope or store is never found), 2 on a usage
// error or an unreachable store.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  geoidem contract -url URL [-path PATH] [-body FILE] [-lease D] [-header 'Name: value'] [-webhook-secret whsec_…] [-json]
  geoidem keys get|release|forget|stats -store STORE [-scope SCOPE] [KEY]
  geoidem proxy -upstream URL [-addr ADDR] [-store STORE] [flags]
  geoidem version
run 'geoidem contract -h', 'geoidem keys get -h' or 'geoidem proxy -h' for the flags.
`

// run is the command, returning its exit code: 0 success, 1 a rule broken
// (contract) or an operation refused (keys), 2 a usage error or an unreachable
// receiver or store.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "contract":
		return contract(ctx, args[1:], stdout, stderr)
	case "keys":
		return keys(ctx, args[1:], stdin, stdout, stderr)
	case "proxy":
		return proxy(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		return printVersion(stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "geoidem: unknown command %q\n%s", args[0], usage)
	return 2
}
