// Command geoidem checks and operates geoidem receivers from outside Go.
//
//	geoidem contract -url URL [-path /features] [flags]
//	geoidem keys get|release|forget|stats -store STORE [flags] …
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
//	                          completed (status, headers, body size, retention left)
//	release -scope SCOPE KEY  frees a key stuck in flight, only once its lease has run out
//	                          unless -force; never touches a completed record
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
run 'geoidem contract -h' or 'geoidem keys get -h' for the flags.
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
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "geoidem: unknown command %q\n%s", args[0], usage)
	return 2
}
