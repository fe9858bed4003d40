// Command geoidem checks and operates geoidem receivers from outside Go.
//
//	geoidem contract -url URL [-path /features] [flags]
//
// contract runs every rule of the contract suite (package
// middleware/contracttest) against a running receiver written in any
// language, with the paired sender, and prints one line per rule: pass,
// fail with the answers that broke it, or not applicable; then a summary.
// It exits 0 when every rule holds, 1 when one fails, 2 on a usage error or
// an unreachable receiver. -json prints the report as JSON, for CI.
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
run 'geoidem contract -h' for the flags.
`

// run is the command, returning its exit code: 0 success, 1 a rule broken
// (contract), 2 a usage error or an unreachable
// receiver or store.
func run(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "contract":
		return contract(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "geoidem: unknown command %q\n%s", args[0], usage)
	return 2
}
