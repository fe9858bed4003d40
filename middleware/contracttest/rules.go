package contracttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
)

// The rules, as the failures state them.
const (
	ruleLostAck     = "RULE BROKEN: a retry after a lost acknowledgement must be answered from the record (Idempotent-Replayed: true, the first answer's status and body), not executed again"
	ruleConcurrent  = "RULE BROKEN: concurrent duplicates (one key, one payload) must execute once and all end with the same status and body"
	ruleKeyReuse    = "RULE BROKEN: another payload under a used key must be answered 422 (an RFC 9457 problem document, or plain JSON), at once, and change nothing"
	ruleInvalid     = "RULE BROKEN: an invalid payload must be answered 422 with a problem document and never retried"
	ruleRetryAfter  = "RULE BROKEN: after 503 or 429 with Retry-After the sender must wait the Retry-After, then retry with the same key and body, and the retry must be executed once"
	ruleMissingKey  = "RULE BROKEN: a request without an Idempotency-Key must be answered 400 (a missing-key problem document, or plain JSON) without running anything or claiming anything"
	ruleMalformed   = "RULE BROKEN: a request with a malformed Idempotency-Key must be answered 400 (a malformed-key problem document, or plain JSON) without running anything or claiming anything"
	ruleNoSetCookie = "RULE BROKEN: a replayed response must not carry Set-Cookie"
	setup           = "SETUP: the receiver must accept the suite's valid payloads with a 2xx answer"
)

// first delivers a new payload under a new key and requires a 2xx answer
// that is not a replay: the start of most rules.
func (s *suite) first(t tester, snd *sender, base string) (key string, body []byte, res client.Result) {
	t.Helper()
	key, body = s.key(t), s.payload()
	res, err := snd.deliver(t, base, key, body)
	if err != nil || res.Replayed {
		t.Fatalf("%s\n\tthe first delivery of key %q: %s%s", setup, key, answer(res, err), snd.attempts)
	}
	return key, body, res
}

func (s *suite) testLostAcknowledgement(t tester) {
	executed := s.expectExecutions(t, ruleLostAck)
	p := newProxy(t, s.seen, s.base, func(n int, _ http.ResponseWriter) action {
		if n == 1 {
			return forwardDrop
		}
		return forward
	})
	snd := s.sender(t, 10)
	key, body := s.key(t), s.payload()
	res, err := snd.deliver(t, p.url, key, body)

	ex := p.exchanges()
	if len(ex) < 2 {
		t.Fatalf("%s\n\tthe proxy saw %d request(s), want the dropped first attempt and a retry; the delivery ended: %s\n\tproxy:%s\n\tsender:%s",
			ruleLostAck, len(ex), answer(res, err), p, snd.attempts)
	}
	orig := ex[0]
	if orig.err != nil || orig.status < 200 || orig.status > 299 || orig.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("%s\n\tthe receiver's answer to the first attempt (which the proxy dropped) was not a fresh 2xx\n\tproxy:%s", setup, p)
	}
	for _, e := range ex[1:] {
		if !slices.Equal(e.keys, orig.keys) || !bytes.Equal(e.body, orig.body) {
			t.Errorf("%s\n\tthe retry did not carry the first attempt's key and body\n\tproxy:%s", ruleLostAck, p)
		}
	}
	switch {
	case err != nil:
		t.Errorf("%s\n\tthe retry failed: %s\n\tproxy:%s\n\tsender:%s", ruleLostAck, answer(res, err), p, snd.attempts)
	case !res.Replayed:
		t.Errorf("%s\n\tthe retry was not answered as a replay (the handler ran again?): %s\n\tfirst answer (dropped): %d %s\n\tproxy:%s",
			ruleLostAck, answer(res, err), orig.status, quote(orig.answer), p)
	case res.StatusCode != orig.status || !bytes.Equal(res.Body, orig.answer):
		t.Errorf("%s\n\tthe replay differs from the first answer\n\tfirst answer (dropped): %d %s\n\treplay: %s\n\tproxy:%s",
			ruleLostAck, orig.status, quote(orig.answer), answer(res, err), p)
	}
	executed(1)
}

func (s *suite) testConcurrentDuplicates(t tester) {
	const n = 50
	snd := s.sender(t, 20)
	snd.warm(t, s.base, n)
	executed := s.expectExecutions(t, ruleConcurrent)
	key, body := s.key(t), s.payload()

	type outcome struct {
		res client.Result
		err error
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			out[i].res, out[i].err = snd.deliver(t, s.base, key, body)
		})
	}
	close(gate)
	wg.Wait()

	// Group the outcomes, to show them.
	type group struct {
		status   int
		replayed bool
		body     string
		err      string
	}
	counts := map[group]int{}
	var order []group
	fresh, conflicts := 0, 0
	var executedAnswer client.Result
	for _, o := range out {
		g := group{status: o.res.StatusCode, replayed: o.res.Replayed, body: string(o.res.Body)}
		if o.err != nil {
			g.err = o.err.Error()
		}
		if counts[g] == 0 {
			order = append(order, g)
		}
		counts[g]++
		if o.err == nil && !o.res.Replayed {
			fresh++
			executedAnswer = o.res
		}
	}
	for _, a := range snd.attempts.all() {
		if a.StatusCode == http.StatusConflict {
			conflicts++
		}
	}
	var summary strings.Builder
	for i, g := range order {
		if i == 8 {
			fmt.Fprintf(&summary, "\n\t\t… and %d other answers", len(order)-i)
			break
		}
		fmt.Fprintf(&summary, "\n\t\t%d× status %d, Idempotent-Replayed: %t, body %s", counts[g], g.status, g.replayed, quote([]byte(g.body)))
		if g.err != "" {
			fmt.Fprintf(&summary, ", error: %s", g.err)
		}
	}
	if fresh != 1 {
		t.Errorf("%s\n\t%d of the %d deliveries were answered without Idempotent-Replayed: true, want exactly 1; they ended:%s", ruleConcurrent, fresh, n, summary.String())
	} else {
		for _, g := range order {
			if g.err != "" || g.status != executedAnswer.StatusCode || g.body != string(executedAnswer.Body) {
				t.Errorf("%s\n\tnot every delivery ended with the executed answer (%d %s); they ended:%s",
					ruleConcurrent, executedAnswer.StatusCode, quote(executedAnswer.Body), summary.String())
				break
			}
		}
	}
	t.Logf("%d concurrent deliveries, %d attempts in all, %d of them answered 409 in flight", n, len(snd.attempts.all()), conflicts)
	if conflicts == 0 && fresh == 1 {
		t.Logf("no duplicate overlapped the original, which finished first: against a receiver this fast the rule shows less")
	}
	executed(1)
}

func (s *suite) testKeyReuse(t tester) {
	executed := s.expectExecutions(t, ruleKeyReuse)
	snd := s.sender(t, 10)
	key, body, orig := s.first(t, snd, s.base)

	other := s.payload()
	before := len(snd.attempts.all())
	res, err := snd.deliver(t, s.base, key, other)
	tries := len(snd.attempts.all()) - before
	var se *client.StatusError
	switch {
	case err == nil || !errors.As(err, &se) || se.StatusCode != http.StatusUnprocessableEntity:
		t.Errorf("%s\n\tkey %q with another payload: %s, want 422", ruleKeyReuse, key, answer(res, err))
	case !errors.Is(err, client.ErrPermanent) || tries != 1:
		t.Errorf("%s\n\tthe sender made %d attempt(s) (want 1) and ended with %v (want a permanent failure)", ruleKeyReuse, tries, err)
	default:
		if fault := check422(se.Header, se.Body); fault != "" {
			t.Errorf("%s\n\t%s\n\tanswer: %s", ruleKeyReuse, fault, answer(res, err))
		}
	}

	again, err := snd.deliver(t, s.base, key, body)
	if err != nil || !again.Replayed || again.StatusCode != orig.StatusCode || !bytes.Equal(again.Body, orig.Body) {
		t.Errorf("%s\n\tafter the rejected reuse, the first payload under its key must still be replayed as first answered\n\tfirst answer: %s\n\tnow: %s",
			ruleKeyReuse, answer(orig, nil), answer(again, err))
	}
	executed(1)
}

func (s *suite) testInvalidGeometry(t tester) {
	if s.skipInvalid {
		t.Skip("Target.SkipInvalidGeometry: the receiver has no validator, so invalid payloads are not checked")
	}
	executed := s.expectExecutions(t, ruleInvalid)
	snd := s.sender(t, 10)
	key := s.key(t)
	res, err := snd.deliver(t, s.base, key, s.invalid)
	var se *client.StatusError
	tries := len(snd.attempts.all())
	switch {
	case err == nil || !errors.As(err, &se) || se.StatusCode != http.StatusUnprocessableEntity:
		t.Errorf("%s\n\tthe invalid payload %s: %s, want 422%s", ruleInvalid, quote(s.invalid), answer(res, err), snd.attempts)
	case tries != 1 || !errors.Is(err, client.ErrPermanent):
		t.Errorf("%s\n\tthe sender made %d attempts, want 1 (and a permanent failure, got %v)%s", ruleInvalid, tries, err, snd.attempts)
	default:
		if fault := problemOf(err, ""); fault != "" {
			t.Errorf("%s\n\tthe 422 is not a problem document: %s\n\tanswer: %s", ruleInvalid, fault, answer(res, err))
		}
	}
	executed(0)
}

func (s *suite) testRetryAfter(t tester) {
	cases := []struct {
		name   string
		status int
		wait   time.Duration
		// header returns the Retry-After value, and the Date header to send
		// with it ("" for none).
		header func() (retryAfter, date string)
	}{
		{"503DeltaSeconds", http.StatusServiceUnavailable, time.Second, func() (string, string) { return "1", "" }},
		{"429HTTPDate", http.StatusTooManyRequests, 2 * time.Second, func() (string, string) {
			// A date two seconds after the response's Date: the sender
			// measures from Date, so neither clock's skew matters.
			now := time.Now().UTC().Truncate(time.Second)
			return now.Add(2 * time.Second).Format(http.TimeFormat), now.Format(http.TimeFormat)
		}},
	}
	for _, c := range cases {
		t.run(c.name, func(t tester) {
			executed := s.expectExecutions(t, ruleRetryAfter)
			p := newProxy(t, s.seen, s.base, func(n int, w http.ResponseWriter) action {
				if n > 1 {
					return forward
				}
				ra, date := c.header()
				w.Header().Set("Retry-After", ra)
				if date != "" {
					w.Header().Set("Date", date)
				}
				w.Header().Set("Content-Type", problem.MediaType)
				w.WriteHeader(c.status)
				fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d}`, http.StatusText(c.status), c.status)
				return answerSelf
			})
			snd := s.sender(t, 10)
			key, body := s.key(t), s.payload()
			res, err := snd.deliver(t, p.url, key, body)
			show := fmt.Sprintf("\n\tdelivery: %s\n\tproxy:%s\n\tsender:%s\n\tsleeps requested: %v", answer(res, err), p, snd.attempts, snd.clock.requested())

			ex := p.exchanges()
			if err != nil || res.StatusCode < 200 || res.StatusCode > 299 {
				t.Fatalf("%s\n\tthe delivery did not succeed after the %d%s", ruleRetryAfter, c.status, show)
			}
			if len(ex) != 2 {
				t.Errorf("%s\n\tthe proxy saw %d requests, want 2 (the %d and one retry)%s", ruleRetryAfter, len(ex), c.status, show)
			} else if !slices.Equal(ex[1].keys, ex[0].keys) || !bytes.Equal(ex[1].body, ex[0].body) {
				t.Errorf("%s\n\tthe retry did not carry the first attempt's key and body%s", ruleRetryAfter, show)
			}
			if sl := snd.clock.requested(); len(sl) != 1 || sl[0] != c.wait {
				t.Errorf("%s\n\tthe sender slept %v, want exactly [%v] (Retry-After), not its own backoff (%v to %v)%s",
					ruleRetryAfter, sl, c.wait, backoff.Base, backoff.Cap, show)
			}
			if at := snd.attempts.all(); len(at) == 0 || !at[0].FromRetryAfter || at[0].Delay != c.wait {
				t.Errorf("%s\n\tthe first attempt's delay was not taken from Retry-After%s", ruleRetryAfter, show)
			}
			if res.Replayed {
				t.Errorf("%s\n\tthe retry was answered as a replay, but the receiver never saw the first attempt%s", ruleRetryAfter, show)
			}
			executed(1)
		})
	}
}

// plain sends body to the ingest path with net/http alone, with the given
// Idempotency-Key field values (none for nil), and returns the answer.
func (s *suite) plain(t tester, keys []string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.ingestURL(s.base), bytes.NewReader(body))
	if err != nil {
		t.Fatalf("contracttest: %v", err)
	}
	for k, vs := range s.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", s.contentType)
	for _, k := range keys {
		req.Header.Add("Idempotency-Key", k)
	}
	if s.sign != nil {
		key := ""
		if len(keys) > 0 {
			key = keys[0]
		}
		if err := s.sign(req, key, body); err != nil {
			t.Fatalf("contracttest: Target.Sign: %v", err)
		}
	}
	resp, err := newClient(t, s.seen).Do(req)
	if err != nil {
		t.Fatalf("contracttest: POST with Idempotency-Key %q: %v", keys, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("contracttest: reading the answer: %v", err)
	}
	return resp.StatusCode, resp.Header, b
}

// expect400 checks one plain request's answer.
func (s *suite) expect400(t tester, rule string, keys []string, body []byte, wantType string) {
	t.Helper()
	status, h, b := s.plain(t, keys, body)
	if status != http.StatusBadRequest {
		t.Errorf("%s\n\tIdempotency-Key fields %s: answered %d, want 400; body %s", rule, showKeys(keys), status, quote(b))
		return
	}
	if fault := check400(h, b, wantType); fault != "" {
		t.Errorf("%s\n\tIdempotency-Key fields %s: %s; body %s", rule, showKeys(keys), fault, quote(b))
	}
}

// expect400OrBare checks one plain request's answer, with a field that is
// a malformed RFC 9651 string and printable ASCII: 400 as expect400 wants
// it, or a 2xx that is no replay, from a receiver that took the field as a
// bare key (it reports true then). Each such field is another key, never
// sent before, so its first answer is never a replay.
func (s *suite) expect400OrBare(t tester, rule string, keys []string, body []byte, wantType string) bool {
	t.Helper()
	status, h, b := s.plain(t, keys, body)
	switch {
	case status >= 200 && status < 300 && h.Get("Idempotent-Replayed") != "true":
		t.Logf("Idempotency-Key field %s taken as a bare key: answered %d", showKeys(keys), status)
		return true
	case status != http.StatusBadRequest:
		t.Errorf("%s\n\tIdempotency-Key fields %s: answered %d, want 400, or a fresh 2xx for a key taken bare; body %s", rule, showKeys(keys), status, quote(b))
	default:
		if fault := check400(h, b, wantType); fault != "" {
			t.Errorf("%s\n\tIdempotency-Key fields %s: %s; body %s", rule, showKeys(keys), fault, quote(b))
		}
	}
	return false
}

// check422 says what is wrong with the body of a 422 refusing a reused
// key, "" if nothing: plain JSON, a receiver's own format, or an RFC 9457
// problem document of any type (absent: about:blank), whose status, if
// given, is 422.
func check422(h http.Header, b []byte) string {
	if plainJSON(h, b) {
		return ""
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != problem.MediaType {
		return fmt.Sprintf("the 422 is neither plain JSON nor an RFC 9457 problem document: Content-Type is %q", h.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "the 422 is a problem document whose body is not a JSON object: " + err.Error()
	}
	if typ, ok := doc["type"]; ok {
		if _, isString := typ.(string); !isString {
			return fmt.Sprintf(`the 422's problem document has a "type" that is not a string: %v`, typ)
		}
	}
	if st, ok := doc["status"]; ok && st != float64(http.StatusUnprocessableEntity) {
		return fmt.Sprintf(`the 422's problem document has "status" %v`, st)
	}
	return ""
}

// check400 says what is wrong with the body of a 400 refusing a key, ""
// if nothing: a receiver of its own answers in its own JSON, and a problem
// document must be a right one, of type wantType.
func check400(h http.Header, b []byte, wantType string) string {
	if plainJSON(h, b) {
		return ""
	}
	if fault := checkProblem(http.StatusBadRequest, h, b, wantType); fault != "" {
		return "the 400 is neither plain JSON nor the expected problem document: " + fault
	}
	return ""
}

func showKeys(keys []string) string {
	if keys == nil {
		return "(none)"
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		if len(k) > 40 {
			q[i] = strconv.Quote(k[:40]) + "… (" + strconv.Itoa(len(k)) + " bytes)"
		} else {
			q[i] = strconv.Quote(k)
		}
	}
	return strings.Join(q, ", ")
}

// afterwards delivers body under key, properly, and requires it to be
// executed: the rejected requests before it claimed nothing.
func (s *suite) afterwards(t tester, rule, key string, body []byte) {
	t.Helper()
	snd := s.sender(t, 10)
	res, err := snd.deliver(t, s.base, key, body)
	if err != nil || res.Replayed {
		t.Errorf("%s\n\tthe same payload sent correctly afterwards under key %q must be executed, not replayed or refused: %s%s",
			rule, key, answer(res, err), snd.attempts)
	}
}

// skipSigned skips a key rule for a receiver that takes its key from a
// signed message id.
func (s *suite) skipSigned(t tester) {
	if s.sign != nil {
		t.Skip("Target.Sign: the receiver takes its key from the signed message id, not from Idempotency-Key")
	}
}

func (s *suite) testMissingKey(t tester) {
	s.skipSigned(t)
	executed := s.expectExecutions(t, ruleMissingKey)
	body := s.payload()
	s.expect400(t, ruleMissingKey, nil, body, middleware.ProblemMissingKey)
	s.afterwards(t, ruleMissingKey, s.key(t), body)
	executed(1)
}

func (s *suite) testMalformedKey(t tester) {
	s.skipSigned(t)
	executed := s.expectExecutions(t, ruleMalformed)
	key, body := s.key(t), s.payload()
	cases := []struct {
		name string
		keys []string
	}{
		{"Empty", []string{""}},
		{"OnlySpaces", []string{"   "}},
		{"ControlCharacter", []string{key[:8] + "\t" + key[8:]}},
		{"NotASCII", []string{key + "-ключ"}},
		{"Over255Characters", []string{key + strings.Repeat("x", 300-len(key))}},
		{"Over255CharactersQuoted", []string{`"` + key + strings.Repeat("x", 300-len(key)) + `"`}},
		{"SFStringUnterminated", []string{`"` + key}},
		{"SFStringBadEscape", []string{`"` + key + `\n"`}},
		{"SFStringTrailingCharacters", []string{`"` + key + `"x`}},
		{"TwoKeyFields", []string{key, key}},
	}
	bare := 0 // malformed RFC 9651 strings a receiver took as bare keys
	for _, c := range cases {
		t.run(c.name, func(t tester) {
			if strings.HasPrefix(c.name, "SFString") {
				// Malformed only to a receiver that parses RFC 9651
				// strings: one that takes the field as written has a
				// key of its own, quotes and all.
				if s.expect400OrBare(t, ruleMalformed, c.keys, body, middleware.ProblemMalformedKey) {
					bare++
				}
				return
			}
			s.expect400(t, ruleMalformed, c.keys, body, middleware.ProblemMalformedKey)
		})
	}
	s.afterwards(t, ruleMalformed, key, body)
	executed(1 + bare)
}

func (s *suite) testNoSetCookie(t tester) {
	executed := s.expectExecutions(t, ruleNoSetCookie)
	snd := s.sender(t, 10)
	key, body, orig := s.first(t, snd, s.base)
	res, err := snd.deliver(t, s.base, key, body)
	switch {
	case err != nil || !res.Replayed:
		t.Errorf("%s\n\tthe second delivery of key %q was not a replay, so there is nothing to check: %s\n\tfirst answer: %s",
			ruleNoSetCookie, key, answer(res, err), answer(orig, nil))
	case len(res.Header.Values("Set-Cookie")) > 0:
		t.Errorf("%s\n\tthe replay carries Set-Cookie %q (the original carried %q)", ruleNoSetCookie, res.Header.Values("Set-Cookie"), orig.Header.Values("Set-Cookie"))
	}
	if len(orig.Header.Values("Set-Cookie")) == 0 {
		t.inconclusive("the receiver set no cookie on the original answer, so its replay could not carry one: the rule could not be broken here")
	}
	executed(1)
}
