package linearize_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/linearize"
	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Histories of one key, with times in milliseconds: an operation called at
// c and returned at r acted in [c, r] ms of wall time.

const ms = time.Millisecond

var errTimeout = errors.New("i/o timeout")

func fp(s string) keystore.Fingerprint {
	var f keystore.Fingerprint
	copy(f[:], s)
	return f
}

func op(client int, c, r int64, in linearize.KeyInput, out linearize.KeyOutput) linearize.KeyOp {
	in.Start, in.End = time.Duration(c)*ms, time.Duration(r)*ms
	if out.Err != nil && !errors.Is(out.Err, keystore.ErrLeaseLost) {
		in.End = linearize.Forever
		r = linearize.Pending
	}
	return linearize.KeyOp{Client: client, Call: c, Return: r, Input: in, Output: out}
}

// claim is a Claim by client with the token client: each client of a
// history claims at most once, or repeats its own Claim.
func claim(client int, c, r int64, f string, lease time.Duration, out keystore.Claim, err error) linearize.KeyOp {
	return op(client, c, r, linearize.KeyInput{Kind: linearize.Claim, Token: keystore.Token(client), Fingerprint: fp(f), Duration: lease}, linearize.KeyOutput{Claim: out, Err: err})
}

func acquired(f string, tookOver bool) keystore.Claim {
	return keystore.Claim{Acquired: true, State: keystore.InFlight, Fingerprint: fp(f), TookOver: tookOver}
}

func inFlight(f string, left time.Duration) keystore.Claim {
	return keystore.Claim{State: keystore.InFlight, Fingerprint: fp(f), LeaseRemaining: left}
}

func completed(f string, rec []byte) keystore.Claim {
	return keystore.Claim{State: keystore.Completed, Fingerprint: fp(f), Record: rec}
}

func extend(client int, c, r int64, tok keystore.Token, lease time.Duration, err error) linearize.KeyOp {
	return extendLeft(client, c, r, tok, lease, 0, err)
}

// extendLeft is an Extend that reports left, the lease that remained.
func extendLeft(client int, c, r int64, tok keystore.Token, lease, left time.Duration, err error) linearize.KeyOp {
	return op(client, c, r, linearize.KeyInput{Kind: linearize.Extend, Token: tok, Duration: lease}, linearize.KeyOutput{Remaining: left, Err: err})
}

func complete(client int, c, r int64, tok keystore.Token, rec []byte, err error) linearize.KeyOp {
	return op(client, c, r, linearize.KeyInput{Kind: linearize.Complete, Token: tok, Record: rec, Duration: time.Hour}, linearize.KeyOutput{Err: err})
}

func release(client int, c, r int64, tok keystore.Token, err error) linearize.KeyOp {
	return op(client, c, r, linearize.KeyInput{Kind: linearize.Release, Token: tok}, linearize.KeyOutput{Err: err})
}

func rec(body string) []byte {
	return record.Append(nil, record.Record{StatusCode: 201, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(body)})
}

var errLost = fmt.Errorf("store: %w", keystore.ErrLeaseLost)

const lease = 100 * ms

func TestKeyModel(t *testing.T) {
	cases := []struct {
		name  string
		model linearize.KeyModel
		h     []linearize.KeyOp
		want  linearize.Verdict
	}{
		{"one claim", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
		}, linearize.Linearizable},
		{"concurrent claims: one acquires, one sees it in flight", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 3, "a", lease, acquired("a", false), nil),
			claim(2, 1, 2, "b", lease, inFlight("a", 99*ms), nil),
		}, linearize.Linearizable},
		{"concurrent claims that both acquire", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 3, "a", lease, acquired("a", false), nil),
			claim(2, 1, 2, "b", lease, acquired("b", false), nil),
		}, linearize.Illegal},
		{"in flight with the wrong fingerprint", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 2, 3, "b", lease, inFlight("b", 90*ms), nil),
		}, linearize.Illegal},
		{"lease remaining longer than the lease", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 2, 3, "b", lease, inFlight("a", 150*ms), nil),
		}, linearize.Illegal},
		{"lease remaining measured before the holder's claim", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 5, "a", lease, acquired("a", false), nil),
			claim(2, 1, 30, "b", lease, inFlight("a", 120*ms), nil),
		}, linearize.Illegal},
		{"the same, measured from the start of the call", linearize.KeyModel{LeaseRemainingFromCallStart: true}, []linearize.KeyOp{
			claim(1, 0, 5, "a", lease, acquired("a", false), nil),
			claim(2, 1, 30, "b", lease, inFlight("a", 120*ms), nil),
		}, linearize.Linearizable},
		{"the same, longer than the call", linearize.KeyModel{LeaseRemainingFromCallStart: true}, []linearize.KeyOp{
			claim(1, 0, 5, "a", lease, acquired("a", false), nil),
			claim(2, 1, 10, "b", lease, inFlight("a", 120*ms), nil),
		}, linearize.Illegal},
		{"takeover after the lease", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, acquired("b", true), nil),
		}, linearize.Linearizable},
		{"takeover without TookOver", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, acquired("b", false), nil),
		}, linearize.Illegal},
		{"takeover while the lease runs", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 50, 51, "b", lease, acquired("b", true), nil),
		}, linearize.Illegal},
		{"takeover at the edge of the lease, within the slack", linearize.KeyModel{Slack: 5 * ms}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 96, 97, "b", lease, acquired("b", true), nil),
		}, linearize.Linearizable},
		{"a lease that never ends", linearize.KeyModel{Slack: 5 * ms}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, inFlight("a", 10*ms), nil),
		}, linearize.Illegal},
		{"extend keeps the key", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			extend(1, 80, 81, 1, lease, nil),
			claim(2, 150, 151, "b", lease, inFlight("a", 30*ms), nil),
		}, linearize.Linearizable},
		{"extend after the lease ran out succeeds", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			extend(1, 150, 151, 1, lease, nil),
		}, linearize.Illegal},
		{"stale complete fenced after a takeover", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, acquired("b", true), nil),
			complete(1, 160, 161, 1, rec("one"), errLost),
			complete(2, 170, 171, 2, rec("two"), nil),
			claim(3, 180, 181, "c", lease, completed("b", rec("two")), nil),
		}, linearize.Linearizable},
		{"stale complete that succeeds after a takeover", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, acquired("b", true), nil),
			complete(1, 160, 161, 1, rec("one"), nil),
		}, linearize.Illegal},
		{"stale complete succeeds, same record as the new owner's", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, acquired("b", true), nil),
			complete(2, 160, 161, 2, rec("same"), nil),
			complete(1, 170, 171, 1, rec("same"), nil),
		}, linearize.Illegal},
		{"complete concurrent with a claim: the claim may see either", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 20, 1, rec("one"), nil),
			claim(2, 11, 12, "b", lease, inFlight("a", 90*ms), nil),
			claim(3, 13, 14, "c", lease, completed("a", rec("one")), nil),
		}, linearize.Linearizable},
		{"replay of a record never stored", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 20, 1, rec("one"), nil),
			claim(2, 30, 31, "b", lease, completed("a", rec("two")), nil),
		}, linearize.Illegal},
		{"repeats of a token's own work succeed", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 11, 1, rec("one"), nil),
			complete(1, 12, 13, 1, rec("one"), nil),
			extend(1, 14, 15, 1, lease, nil),
			complete(1, 16, 17, 1, rec("other"), errLost),
			release(1, 18, 19, 1, errLost),
		}, linearize.Linearizable},
		{"repeated release succeeds", linearize.KeyModel{}, []linearize.KeyOp{
			claim(2, 20, 21, "b", lease, acquired("b", false), nil),
			release(2, 22, 23, 2, nil),
			release(2, 24, 25, 2, nil),
			extend(2, 26, 27, 2, lease, errLost),
		}, linearize.Linearizable},
		{"repeated complete with another record succeeds", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 11, 1, rec("one"), nil),
			complete(1, 12, 13, 1, rec("other"), nil),
		}, linearize.Illegal},
		{"repeated complete reported errLost", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 11, 1, rec("one"), nil),
			complete(1, 12, 13, 1, rec("one"), errLost),
		}, linearize.Illegal},
		{"release of a completed key", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 11, 1, rec("one"), nil),
			release(1, 12, 13, 1, nil),
		}, linearize.Illegal},
		{"repeated release after the key was claimed again", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			release(1, 10, 11, 1, nil),
			claim(2, 20, 21, "b", lease, acquired("b", false), nil),
			release(1, 30, 31, 1, nil),
		}, linearize.Illegal},
		{"repeated release after the key was claimed again and its record expired", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			release(1, 10, 11, 1, nil),
			claim(2, 20, 21, "b", lease, acquired("b", false), nil),
			op(2, 30, 31, linearize.KeyInput{Kind: linearize.Complete, Token: 2, Record: rec("two"), Duration: 50 * ms}, linearize.KeyOutput{}),
			release(1, 100, 101, 1, nil),
		}, linearize.Illegal},
		{"a claim after a release does not take over", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			release(1, 10, 11, 1, nil),
			claim(2, 20, 21, "b", lease, acquired("b", true), nil),
		}, linearize.Illegal},
		{"timed-out claim that took effect", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, keystore.Claim{}, errTimeout),
			claim(2, 10, 11, "b", lease, inFlight("a", 80*ms), nil),
			claim(3, 150, 151, "c", lease, acquired("c", true), nil),
		}, linearize.Linearizable},
		{"timed-out claim that did not", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, keystore.Claim{}, errTimeout),
			claim(2, 10, 11, "b", lease, acquired("b", false), nil),
		}, linearize.Linearizable},
		{"timed-out complete that took effect late", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 11, 1, rec("one"), errTimeout),
			claim(2, 20, 21, "b", lease, inFlight("a", 70*ms), nil),
			claim(3, 30, 31, "c", lease, completed("a", rec("one")), nil),
		}, linearize.Linearizable},
		{"timed-out complete cannot complete after the lease", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			complete(1, 10, 11, 1, rec("one"), errTimeout),
			claim(2, 150, 151, "b", lease, acquired("b", true), nil),
			claim(3, 160, 161, "c", lease, completed("a", rec("one")), nil),
		}, linearize.Illegal},
		{"timed-out release", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			release(1, 10, 11, 1, errTimeout),
			claim(2, 20, 21, "b", lease, acquired("b", false), nil),
		}, linearize.Linearizable},
		{"a claim reporting its own entry in flight, strict", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, inFlight("a", 99*ms), nil),
		}, linearize.Illegal},
		{"a claim reporting its own entry in flight, resent by the client", linearize.KeyModel{}, linearize.WithResends([]linearize.KeyOp{
			claim(1, 0, 1, "a", lease, inFlight("a", 99*ms), nil),
		}), linearize.Illegal},
		{"a claim resent by the client reports its own entry acquired", linearize.KeyModel{}, linearize.WithResends([]linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 10, 11, "b", lease, inFlight("a", 89*ms), nil),
			claim(3, 150, 151, "c", lease, acquired("c", true), nil),
		}), linearize.Linearizable},
		{"a claim repeated with the holder's token reports it acquired", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(1, 10, 11, "a", lease, acquired("a", false), nil),
			claim(2, 20, 21, "b", lease, inFlight("a", 79*ms), nil),
		}, linearize.Linearizable},
		{"a claim repeated with the holder's token after the lease ran out", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(1, 150, 151, "a", lease, acquired("a", false), nil),
		}, linearize.Illegal},
		{"a release fences the token of a claim of unknown outcome", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, keystore.Claim{}, errTimeout),
			release(1, 5, 6, 1, errLost),
			claim(2, 10, 11, "b", lease, acquired("b", false), nil),
		}, linearize.Linearizable},
		{"a claim that acquires after its token's release", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, keystore.Claim{}, errTimeout),
			release(1, 5, 6, 1, errLost),
			claim(2, 10, 11, "b", lease, inFlight("a", 80*ms), nil),
		}, linearize.Illegal},
		{"a claim fenced by its token's release fails with ErrLeaseLost", linearize.KeyModel{}, []linearize.KeyOp{
			release(1, 0, 1, 1, errLost),
			claim(1, 2, 3, "a", lease, keystore.Claim{}, errLost),
			claim(2, 4, 5, "b", lease, acquired("b", false), nil),
		}, linearize.Linearizable},
		{"a claim acquiring with a released token", linearize.KeyModel{}, []linearize.KeyOp{
			release(1, 0, 1, 1, errLost),
			claim(1, 2, 3, "a", lease, acquired("a", false), nil),
		}, linearize.Illegal},
		{"a claim failing with ErrLeaseLost unfenced", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 2, 3, "a", lease, keystore.Claim{}, errLost),
		}, linearize.Illegal},
		{"extend reports the lease that remained", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			extendLeft(1, 50, 51, 1, lease, 50*ms, nil),
		}, linearize.Linearizable},
		{"extend reports more lease than remained", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			extendLeft(1, 50, 51, 1, lease, 90*ms, nil),
		}, linearize.Illegal},
		{"a release reported lost after its first attempt let a claim in", linearize.KeyModel{}, linearize.WithResends([]linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			release(1, 10, 50, 1, errLost),
			claim(2, 20, 21, "b", lease, acquired("b", false), nil),
		}), linearize.Linearizable},
		{"the same without resends", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			release(1, 10, 50, 1, errLost),
			claim(2, 20, 21, "b", lease, acquired("b", false), nil),
		}, linearize.Illegal},
		{"resends do not excuse two owners", linearize.KeyModel{}, linearize.WithResends([]linearize.KeyOp{
			claim(1, 0, 3, "a", lease, acquired("a", false), nil),
			claim(2, 1, 2, "b", lease, acquired("b", false), nil),
		}), linearize.Illegal},
		{"resends do not excuse a stale complete", linearize.KeyModel{}, linearize.WithResends([]linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			claim(2, 150, 151, "b", lease, acquired("b", true), nil),
			complete(1, 160, 161, 1, rec("one"), nil),
		}), linearize.Illegal},
		{"record kept for its retention, then gone", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			op(1, 10, 11, linearize.KeyInput{Kind: linearize.Complete, Token: 1, Record: rec("one"), Duration: 50 * ms}, linearize.KeyOutput{}),
			claim(2, 40, 41, "b", lease, completed("a", rec("one")), nil),
			extend(1, 100, 101, 1, lease, errLost),
			claim(3, 110, 111, "c", lease, acquired("c", false), nil),
		}, linearize.Linearizable},
		{"record replayed past its retention", linearize.KeyModel{}, []linearize.KeyOp{
			claim(1, 0, 1, "a", lease, acquired("a", false), nil),
			op(1, 10, 11, linearize.KeyInput{Kind: linearize.Complete, Token: 1, Record: rec("one"), Duration: 50 * ms}, linearize.KeyOutput{}),
			claim(2, 100, 101, "b", lease, completed("a", rec("one")), nil),
		}, linearize.Illegal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := linearize.Check(c.model.Model(), c.h, 0)
			if res.Verdict != c.want {
				t.Errorf("verdict %v, want %v\n%s", res.Verdict, c.want, res)
			}
		})
	}
}

// The report names the operations of the offending history.
func TestKeyModelReport(t *testing.T) {
	h := []linearize.KeyOp{
		claim(1, 0, 3, "a", lease, acquired("a", false), nil),
		claim(2, 1, 2, "b", lease, acquired("b", false), nil),
	}
	res := linearize.Check(linearize.KeyModel{}.Model(), h, 0)
	t.Log(res)
	for _, want := range []string{"c1 [0.000ms, 3.000ms] Claim(tok1, fp a, lease 100ms) -> acquired", "c2 [1.000ms, 2.000ms] Claim(tok2, fp b, lease 100ms) -> acquired"} {
		if !strings.Contains(res.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, res)
		}
	}
}
