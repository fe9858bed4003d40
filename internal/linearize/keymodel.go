package linearize

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Forever is the End of an operation whose outcome is unknown.
const Forever = time.Duration(math.MaxInt64)

// Kind names a Store method.
type Kind uint8

// The Store methods.
const (
	Claim Kind = iota + 1
	Extend
	Complete
	Release
)

func (k Kind) String() string {
	switch k {
	case Claim:
		return "Claim"
	case Extend:
		return "Extend"
	case Complete:
		return "Complete"
	case Release:
		return "Release"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// KeyInput is one call on a key.
type KeyInput struct {
	Kind        Kind
	Fingerprint keystore.Fingerprint // Claim
	Token       keystore.Token       // the Claim's chosen token; the token of Extend, Complete, Release
	Duration    time.Duration        // the lease (Claim, Extend) or retention (Complete)
	Record      []byte               // Complete: the record's bytes
	// Start and End bound, in wall time since the history began, when the
	// store can have acted: before the call, and after the return (Forever
	// if the outcome is unknown).
	Start, End time.Duration
}

// KeyOutput is what the call returned.
type KeyOutput struct {
	Claim     keystore.Claim // Claim, when Err is nil
	Remaining time.Duration  // Extend, when Err is nil: the lease that remained
	Err       error
}

// KeyOp is one operation on a key.
type KeyOp = Operation[KeyInput, KeyOutput]

// KeyStatus is what a key is in the model.
type KeyStatus uint8

// The statuses of a key.
const (
	Absent    KeyStatus = iota // never claimed
	Held                       // in flight, held by Token (its lease may have run out)
	Completed                  // holds Record, completed by Token (its retention may have run out)
	Released                   // absent again, released by Token, not claimed since
)

// KeyState is the model's state of one key. It is comparable, as the
// checker's memoisation requires.
type KeyState struct {
	Status      KeyStatus
	Token       keystore.Token // the holder, the completer or the releaser; 0: a token nobody knows
	Fingerprint keystore.Fingerprint
	Record      string // RecordKey of the record, when Completed
	// Spent lists, sorted and comma-separated, the tokens used in a
	// Release of the key: none of them may acquire it afterwards.
	Spent string
	// The deadline (the lease while Held, the retention while Completed)
	// is Dur after the instant, between From and To, at which the
	// operation that set it acted.
	From, To, Dur time.Duration
}

// KeyModel is the sequential model of one key of a [keystore.Store], as the
// package keystore documentation defines it, for checking a store's history
// one key at a time (per-key partitioning: the Store contract makes every
// key independent). Its state is a [KeyState]: absent, held, completed or
// released, with the token, fingerprint, record and deadline that go with
// it. What it checks, beyond the states: a Claim's fingerprint is the
// holder's (in flight, completed) or the caller's (acquired); TookOver is
// set exactly when an expired lease is taken over (not after a Release or
// the end of a record's retention); LeaseRemaining is positive and at most
// the holder's lease plus Slack, as is the lease an Extend reports; Extend,
// Complete and Release succeed for the
// token that holds the key while its lease runs, and for the repeats of a
// token's own work (Extend and an equal Complete after its Complete while
// the record is kept, Release after its Release until the key is claimed
// again, a Claim with the token that holds the key), and fail with
// ErrLeaseLost otherwise, changing nothing. The
// marks that make those repeats succeed are assumed to outlast the history
// (stores in this module keep them at least a minute); tokens must be
// unique, as the callers choose them (keystore.NewToken).
//
// Time. A lease or a retention runs on the store's clock, which the test
// cannot read: it only knows, for the operation that set a deadline, the
// wall-time interval [Start, End] in which the store acted, and for every
// later operation its own interval. The model assumes that the store's
// clock runs at the rate of the test's (true of a store on the same
// machine) and lets the two differ by Slack (clock resolution, durations
// rounded to whole milliseconds, clock reads cached for the length of a
// command). A deadline of duration D set by an operation in [S1, E1] is
// then judged by an operation in [S2, E2] as follows:
//
//   - it MAY have passed when E2 - S1 >= D - Slack (the latest the later
//     operation can act, minus the earliest the first can have);
//   - it MUST have passed when S2 - E1 > D + Slack;
//   - otherwise it has not passed.
//
// Where both are possible the model branches: apart from operations of
// unknown outcome, that is its only nondeterminism. Allowing expiry
// whenever enough time MAY have passed alone would accept a store whose
// leases never end (a claim that outlives its crashed owner blocks the key
// for the whole retention); the MUST rule rejects it, and a lease that ends too early (a
// takeover while the holder works) is rejected by the MAY rule. The rules
// do not tie the instants at which operations take effect to the
// judgements of time (the state would have to carry the times of the
// search); the bounds above follow from any such instants, so no history
// of a correct store is rejected.
//
// Unknown outcomes. An operation that failed with an error other than
// keystore.ErrLeaseLost (a timeout, a broken connection) may or may not
// have taken effect, now or later: its Return is Pending, its End is
// Forever, and the model allows both. A Claim that may have acquired the
// key leaves it held by its token until its lease surely ran out, which,
// its End being Forever, the MAY rule allows at any later time; its caller
// may release it with that token. A Release fences its token whatever it
// returns: from then on a Claim with that token fails with ErrLeaseLost
// where it would acquire the key (the Store contract's "claims whose
// outcome is unknown").
type KeyModel struct {
	// Slack is how far the store's judgement of a deadline may differ from
	// the test's clock (see Time above), and how much LeaseRemaining may
	// exceed the lease.
	Slack time.Duration
	// LeaseRemainingFromCallStart lets a Claim measure LeaseRemaining
	// from any instant of its call, even one before the holder's lease
	// began: it may then exceed the lease by up to the Claim's own
	// duration. pgstore's Claim needs it, because it reads the clock once,
	// at the start of its statement, and may then wait for a concurrent
	// Claim's insert to commit and report that claim's lease.
	LeaseRemainingFromCallStart bool
}

// ErrEarlierAttempt is the outcome of the attempts that [WithResends] adds.
var ErrEarlierAttempt = errors.New("linearize: an earlier attempt of this call, whose reply was lost (effect unknown)")

// WithResends returns a copy of h in which each operation may have been
// sent more than once, as a client library does when a connection breaks
// (go-redis retries a command after a network error, MaxRetries times by
// default): before each operation it adds an earlier attempt of the same
// call, in the same interval, whose outcome is unknown. Two attempts stand
// for any number, since the model's operations are idempotent once
// repeated by the same caller: a Claim repeated with the token that holds
// the key reports it acquired, as the Store contract's repeats of a
// token's own work say.
//
// Accepting a history only WithResends is weaker than accepting it as it
// is: it says the store is linearizable per attempt, not per call. In
// particular it accepts a Release reported lost because its applied first
// attempt let another Claim in before the resend.
func WithResends(h []KeyOp) []KeyOp {
	out := make([]KeyOp, 0, 2*len(h))
	for _, op := range h {
		a := op
		a.Output = KeyOutput{Err: ErrEarlierAttempt}
		out = append(out, a, op)
	}
	return out
}

// RecordKey is a comparable form of enc, a record's bytes: records are
// equal, in the sense of the Store contract's repeated Complete, exactly
// when their keys are (when their bytes are). It reads as the record the
// bytes encode, or as the bytes in hexadecimal when they encode none.
func RecordKey(enc []byte) string {
	rec, err := record.Decode(enc)
	if err != nil || !bytes.Equal(record.Append(nil, rec), enc) {
		return fmt.Sprintf("bytes %x", enc)
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(rec.StatusCode))
	names := make([]string, 0, len(rec.Header))
	for n := range rec.Header {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, v := range rec.Header[n] {
			fmt.Fprintf(&b, "|%q:%q", n, v)
		}
	}
	fmt.Fprintf(&b, "|%q", rec.Body)
	return b.String()
}

// Model returns the checker's model of one key, initially absent.
func (km KeyModel) Model() Model[KeyState, KeyInput, KeyOutput] {
	return Model[KeyState, KeyInput, KeyOutput]{
		Init:              KeyState{Status: Absent},
		Step:              km.step,
		DescribeOperation: DescribeKeyOp,
		DescribeState:     KeyState.String,
	}
}

// view is one way an operation may find the key: its status, and whether
// its deadline has passed.
type view struct {
	s       KeyState
	expired bool
}

// views returns the ways an operation in [start, end] may find s.
func (km KeyModel) views(s KeyState, in KeyInput) []view {
	if s.Status != Held && s.Status != Completed {
		return []view{{s: s}}
	}
	may := in.End == Forever || in.End-s.From >= s.Dur-km.Slack
	must := s.To != Forever && in.Start-s.To > s.Dur+km.Slack
	var vs []view
	if !must {
		vs = append(vs, view{s: s})
	}
	if may {
		vs = append(vs, view{s: s, expired: true})
	}
	return vs
}

// acquirable reports whether a Claim acquires the key, and then whether
// it takes over an expired lease.
func (v view) acquirable() (ok, tookOver bool) {
	switch v.s.Status {
	case Absent, Released:
		return true, false
	case Held:
		return v.expired, v.expired
	case Completed:
		return v.expired, false
	}
	return false, false
}

// heldBy reports whether tok holds the key with its lease running.
func (v view) heldBy(tok keystore.Token) bool {
	return v.s.Status == Held && !v.expired && v.s.Token == tok
}

// completedBy reports whether tok completed the key and its record is kept.
func (v view) completedBy(tok keystore.Token) bool {
	return v.s.Status == Completed && !v.expired && v.s.Token == tok
}

func (km KeyModel) step(s KeyState, op KeyOp) []KeyState {
	in, out := op.Input, op.Output
	unknown := out.Err != nil && !errors.Is(out.Err, keystore.ErrLeaseLost)
	lost := out.Err != nil && !unknown
	var next []KeyState
	add := func(ns KeyState) {
		if !slices.Contains(next, ns) {
			next = append(next, ns)
		}
	}
	if unknown {
		add(s) // no effect (or, for a Claim, one that changed nothing)
	}
	for _, v := range km.views(s, in) {
		switch in.Kind {
		case Claim:
			km.claim(v, in, out, unknown, lost, add)
		case Extend:
			switch {
			case v.heldBy(in.Token):
				ns := s
				ns.From, ns.To, ns.Dur = in.Start, in.End, in.Duration
				if !lost && (unknown || km.remainingFits(s, in, out.Remaining)) {
					add(ns)
				}
			case v.completedBy(in.Token): // the repeat of its own work
				if !lost && (unknown || out.Remaining == 0) {
					add(s)
				}
			default:
				if lost {
					add(s)
				}
			}
		case Complete:
			switch {
			case v.heldBy(in.Token):
				if !lost {
					add(KeyState{Status: Completed, Token: in.Token, Fingerprint: s.Fingerprint,
						Record: RecordKey(in.Record), From: in.Start, To: in.End, Dur: in.Duration, Spent: s.Spent})
				}
			case v.completedBy(in.Token) && s.Record == RecordKey(in.Record):
				if !lost {
					add(s)
				}
			default:
				if lost {
					add(s)
				}
			}
		case Release:
			fenced := s.spend(in.Token)
			switch {
			case v.heldBy(in.Token):
				if !lost {
					add(KeyState{Status: Released, Token: in.Token, Spent: fenced.Spent})
				}
			case v.s.Status == Released && v.s.Token == in.Token:
				if !lost {
					add(s)
				}
			default:
				if lost || unknown {
					add(fenced)
				}
			}
		}
	}
	return next
}

// remainingFits reports whether remaining, the lease an Extend by the
// holder of s reports, is one it can have found: not negative, and at most
// what is left of the holder's lease at the Extend's start, plus Slack.
func (km KeyModel) remainingFits(s KeyState, in KeyInput, remaining time.Duration) bool {
	if remaining < 0 {
		return false
	}
	return s.To == Forever || remaining <= s.To+s.Dur-in.Start+km.Slack
}

// spend returns s with tok among its spent tokens.
func (s KeyState) spend(tok keystore.Token) KeyState {
	if s.spent(tok) {
		return s
	}
	toks := []string{strconv.FormatUint(uint64(tok), 10)}
	if s.Spent != "" {
		toks = append(toks, strings.Split(s.Spent, ",")...)
	}
	slices.Sort(toks)
	s.Spent = strings.Join(toks, ",")
	return s
}

// spent reports whether tok was used in a Release of the key.
func (s KeyState) spent(tok keystore.Token) bool {
	t := strconv.FormatUint(uint64(tok), 10)
	return slices.Contains(strings.Split(s.Spent, ","), t)
}

func (km KeyModel) claim(v view, in KeyInput, out KeyOutput, unknown, lost bool, add func(KeyState)) {
	acq, tookOver := v.acquirable()
	spent := v.s.spent(in.Token)
	if lost { // only a Claim fenced by its token's Release fails so
		if acq && spent {
			add(v.s)
		}
		return
	}
	held := func() KeyState {
		return KeyState{Status: Held, Token: in.Token, Fingerprint: in.Fingerprint, From: in.Start, To: in.End, Dur: in.Duration, Spent: v.s.Spent}
	}
	c := out.Claim
	switch {
	case unknown:
		if acq && !spent {
			add(held())
		}
	case c.Acquired && v.heldBy(in.Token): // the repeat of a Claim applied before
		if c.State == keystore.InFlight && !c.TookOver && c.Fingerprint == v.s.Fingerprint {
			add(v.s)
		}
	case c.Acquired:
		if acq && !spent && c.State == keystore.InFlight && c.TookOver == tookOver && c.Fingerprint == in.Fingerprint {
			add(held())
		}
	case c.State == keystore.InFlight:
		if c.LeaseRemaining <= 0 {
			return
		}
		most := v.s.Dur + km.Slack
		if km.LeaseRemainingFromCallStart {
			most += in.End - in.Start // End is finite: the Claim answered
		}
		if v.s.Status == Held && !v.expired && v.s.Token != in.Token && c.Fingerprint == v.s.Fingerprint && c.LeaseRemaining <= most {
			add(v.s)
		}
	case c.State == keystore.Completed:
		if v.s.Status == Completed && !v.expired && c.Fingerprint == v.s.Fingerprint && RecordKey(c.Record) == v.s.Record {
			add(v.s)
		}
	}
}
