package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/middleware/contracttest"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// payloadMark is replaced, in a -body template, by a value unique to each
// payload.
const payloadMark = "{{n}}"

func contract(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("geoidem contract", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var target contracttest.Target
	fl.StringVar(&target.URL, "url", "", "the running receiver's ingest endpoint, e.g. http://127.0.0.1:8080/features, or its base URL with -path (required)")
	fl.StringVar(&target.Path, "path", "", "the ingest path, appended to -url (default: -url's own path, else /)")
	body := fl.String("body", "", "file with a payload the receiver accepts with a 2xx answer; every "+payloadMark+" in it is replaced by a value unique to each payload, and there must be one (default: a GeoJSON Feature with a unique id)")
	invalid := fl.String("invalid-body", "", "file with a payload the receiver must refuse with 422 (default: a GeoJSON Polygon whose ring is not closed)")
	fl.BoolVar(&target.SkipInvalidGeometry, "no-validator", false, "the receiver validates nothing: report InvalidGeometryIs422AndNotRetried not applicable")
	fl.StringVar(&target.ContentType, "content-type", "application/geo+json", "Content-Type of every request")
	fl.DurationVar(&target.Lease, "lease", middleware.DefaultLease, "the receiver's lease: how long it holds a key in flight for a request that never finishes")
	target.Header = http.Header{}
	fl.Func("header", "a header sent with every request, 'Name: value' (repeatable), e.g. the credentials the receiver's scope reads", func(v string) error {
		name, value, ok := strings.Cut(v, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return errors.New("want 'Name: value'")
		}
		target.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		return nil
	})
	var secrets []standardwebhooks.Secret
	fl.Func("webhook-secret", "sign every request as a Standard Webhook with this whsec_… secret (repeatable); the key is then webhook-id, and the two Idempotency-Key rules do not apply", func(v string) error {
		s, err := standardwebhooks.ParseSecret(v)
		secrets = append(secrets, s)
		return err
	})
	asJSON := fl.Bool("json", false, "print the report as JSON")
	timeout := fl.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "geoidem contract: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if target.URL == "" {
		fmt.Fprintln(stderr, "geoidem contract: -url is required")
		return 2
	}
	if *body != "" {
		tmpl, err := os.ReadFile(*body)
		if err != nil {
			fmt.Fprintf(stderr, "geoidem contract: -body: %v\n", err)
			return 2
		}
		if !bytes.Contains(tmpl, []byte(payloadMark)) {
			fmt.Fprintf(stderr, "geoidem contract: -body %s has no %s: the suite needs a different payload each time (e.g. in an id)\n", *body, payloadMark)
			return 2
		}
		var r [4]byte
		_, _ = crand.Read(r[:])
		run := hex.EncodeToString(r[:])
		target.NewPayload = func(n int) []byte {
			return bytes.ReplaceAll(tmpl, []byte(payloadMark), fmt.Appendf(nil, "%s-%d", run, n))
		}
	}
	if *invalid != "" {
		b, err := os.ReadFile(*invalid)
		if err != nil {
			fmt.Fprintf(stderr, "geoidem contract: -invalid-body: %v\n", err)
			return 2
		}
		target.InvalidPayload = b
	}
	if len(secrets) > 0 {
		signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: secrets})
		if err != nil {
			fmt.Fprintf(stderr, "geoidem contract: -webhook-secret: %v\n", err)
			return 2
		}
		target.Sign = func(req *http.Request, key string, body []byte) error {
			if key == "" {
				return nil // unsigned: the receiver refuses it before any key
			}
			return signer.SignRequest(req, key, body)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep, err := contracttest.Check(ctx, target)
	if err != nil {
		fmt.Fprintf(stderr, "geoidem contract: %v\n", err)
		return 2
	}
	n := map[contracttest.Outcome]int{}
	for _, r := range rep.Rules {
		n[r.Outcome]++
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			URL           string                    `json:"url"`
			OK            bool                      `json:"ok"`
			Endpoint      string                    `json:"endpoint"`
			Rules         []contracttest.RuleResult `json:"rules"`
			Passed        int                       `json:"passed"`
			Failed        int                       `json:"failed"`
			NotApplicable int                       `json:"not_applicable"`
			Inconclusive  int                       `json:"inconclusive"`
			Diagnosis     string                    `json:"diagnosis,omitempty"`
		}{rep.Endpoint, rep.OK(), rep.Endpoint, rep.Rules,
			n[contracttest.Pass], n[contracttest.Fail], n[contracttest.NotApplicable], n[contracttest.Inconclusive], rep.Diagnosis}); err != nil {
			fmt.Fprintf(stderr, "geoidem contract: %v\n", err)
			return 2
		}
	} else {
		printReport(stdout, rep)
		fmt.Fprintf(stdout, "contract: %d rules against %s: %d pass, %d fail, %d not applicable",
			len(rep.Rules), rep.Endpoint, n[contracttest.Pass], n[contracttest.Fail], n[contracttest.NotApplicable])
		if n[contracttest.Inconclusive] > 0 {
			fmt.Fprintf(stdout, ", %d inconclusive", n[contracttest.Inconclusive])
		}
		fmt.Fprintln(stdout)
		if rep.Diagnosis != "" {
			fmt.Fprintf(stdout, "contract: %s\n", rep.Diagnosis)
		}
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

// printReport prints one line per rule, its name then its title ("pass
// MissingKeyIs400 (missing key is 400)"), and under a failed rule the
// messages that show the answers that broke it.
func printReport(w io.Writer, rep contracttest.Report) {
	for _, r := range rep.Rules {
		name := r.Name
		if r.Title != "" {
			name += " (" + r.Title + ")"
		}
		switch r.Outcome {
		case contracttest.Pass:
			fmt.Fprintf(w, "pass            %s %v\n", name, r.Elapsed.Round(time.Millisecond))
		case contracttest.NotApplicable:
			fmt.Fprintf(w, "not applicable  %s: %s\n", name, r.Reason)
		case contracttest.Inconclusive:
			fmt.Fprintf(w, "inconclusive    %s: %s\n", name, r.Reason)
		default:
			fmt.Fprintf(w, "FAIL            %s\n", name)
			for _, m := range r.Failures {
				fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(m, "\n", "\n    "))
			}
		}
	}
}
