package standardwebhooks_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

// The published v1a test vector of the Standard Webhooks reference
// libraries: github.com/standard-webhooks/standard-webhooks,
// libraries/go/webhook_asymmetric_test.go (TestAsymmetricWebhookSign),
// over the same message id, timestamp and payload as the v1 vector. The
// reference passes the whsk_ key without its prefix, and decodes it with
// ed25519.NewKeyFromSeed: a whsk_ key is the 32-byte seed.
const (
	vectorSigningKey          = "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=" // "TESTSIGNINGKEYDONOTUSETHISFORANY"
	vectorAsymmetricSignature = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
	// The public key of vectorSigningKey, computed with crypto/ed25519
	// (not published by the reference): it pins the whpk_ encoding.
	vectorPublicKey = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g="
	// The key of the reference's TestAsymmetricWebhook and
	// TestAsymmetricWebhookPrefix ("WEBHOOKASYMMETRICTESTPRIVATEKEY1").
	vectorSigningKey2 = "V0VCSE9PS0FTWU1NRVRSSUNURVNUUFJJVkFURUtFWTE="
)

func mustSigningKey(t testing.TB, s string) standardwebhooks.SigningKey {
	t.Helper()
	k, err := standardwebhooks.ParseSigningKey(s)
	if err != nil {
		t.Fatalf("ParseSigningKey: %v", err)
	}
	return k
}

func mustPublicKey(t testing.TB, s string) standardwebhooks.PublicKey {
	t.Helper()
	k, err := standardwebhooks.ParsePublicKey(s)
	if err != nil {
		t.Fatalf("ParsePublicKey: %v", err)
	}
	return k
}

func TestSignAsymmetricMatchesPublishedVector(t *testing.T) {
	for _, s := range []string{vectorSigningKey, "whsk_" + vectorSigningKey, "  whsk_" + strings.TrimRight(vectorSigningKey, "=") + "\n"} {
		got := standardwebhooks.SignAsymmetric(mustSigningKey(t, s), vectorID, vectorTime, []byte(vectorPayload))
		if got != vectorAsymmetricSignature {
			t.Errorf("SignAsymmetric with key %q… = %s, want the published %s", s[:8], got, vectorAsymmetricSignature)
		}
	}
	key := mustSigningKey(t, vectorSigningKey)
	if got := key.Public().Encode(); got != vectorPublicKey {
		t.Errorf("the vector key's public key encodes as %s, want %s", got, vectorPublicKey)
	}
	// Independently of the package: the signature is ed25519 over
	// id.timestamp.body, under the key whose seed the whsk_ text is.
	seed, _ := base64.StdEncoding.DecodeString(vectorSigningKey)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(vectorAsymmetricSignature, "v1a,"))
	if !ed25519.Verify(pub, []byte(vectorID+"."+vectorTimestamp+"."+vectorPayload), sig) {
		t.Fatal("the published v1a vector does not verify with crypto/ed25519; the test's reading of it is wrong")
	}
	if "whpk_"+base64.StdEncoding.EncodeToString(pub) != vectorPublicKey {
		t.Errorf("vectorPublicKey is not the vector seed's public key")
	}
}

func TestVerifyPublishedAsymmetricVector(t *testing.T) {
	v := newVerifier(t, standardwebhooks.VerifierConfig{
		PublicKeys: []standardwebhooks.PublicKey{mustPublicKey(t, vectorPublicKey)},
		Now:        func() time.Time { return vectorTime.Add(10 * time.Second) },
	})
	sig := vectorAsymmetricSignature
	for _, tt := range []struct {
		name    string
		id, ts  string
		sig     string
		payload string
		want    error // nil: verifies
	}{
		{"the vector", vectorID, vectorTimestamp, sig, vectorPayload, nil},
		{"tampered payload", vectorID, vectorTimestamp, sig, `{"test": 2432232315}`, standardwebhooks.ErrInvalidSignature},
		{"payload re-serialized", vectorID, vectorTimestamp, sig, `{"test":2432232314}`, standardwebhooks.ErrInvalidSignature},
		{"tampered id", "msg_p5jXN8AQM9LWM0D4loKWxJeK", vectorTimestamp, sig, vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"tampered timestamp", vectorID, "1614265331", sig, vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"a bit flipped", vectorID, vectorTimestamp, "v1a,uQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==", vectorPayload, standardwebhooks.ErrInvalidSignature},
		// "invalid signature is invalid" and "partial signature is
		// invalid" in the reference's TestAsymmetricWebhook.
		{"invalid signature", vectorID, vectorTimestamp, "v1a,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"partial signature", vectorID, vectorTimestamp, "v1a,", vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"signature without its padding", vectorID, vectorTimestamp, strings.TrimRight(sig, "="), vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"right signature under v1", vectorID, vectorTimestamp, "v1," + sig[4:], vectorPayload, standardwebhooks.ErrInvalidSignature},
		{"right signature under v2a", vectorID, vectorTimestamp, "v2a," + sig[4:], vectorPayload, standardwebhooks.ErrInvalidSignature},
		// "valid multi sig is valid" in the reference.
		{"several signatures, one valid", vectorID, vectorTimestamp, strings.Join([]string{
			vectorWrongSignature, "v2," + vectorWrongSignature[3:], sig, vectorWrongSignature,
		}, " "), vectorPayload, nil},
		{"a v1 signature only, and the verifier has no secret", vectorID, vectorTimestamp, vectorSignature, vectorPayload, standardwebhooks.ErrInvalidSignature},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(headers(tt.id, tt.ts, tt.sig), []byte(tt.payload))
			if tt.want == nil && err != nil {
				t.Fatalf("Verify: %v, want success", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want an error wrapping %v", err, tt.want)
			}
		})
	}
}

// TestVerifyMixedKeysAndSignatures: a Verifier holding secrets and public
// keys (a rotation, or a sender moving from v1 to v1a) accepts a message
// when any signature verifies under any key of its own version, whatever
// the others in the header.
func TestVerifyMixedKeysAndSignatures(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	oldSecret, otherSecret := rawSecret(t, 'o', 32), rawSecret(t, 'x', 32)
	newKey, oldKey, otherKey := mustSigningKey(t, vectorSigningKey), mustSigningKey(t, vectorSigningKey2), standardwebhooks.GenerateSigningKey()
	v := newVerifier(t, standardwebhooks.VerifierConfig{
		Secrets:    []standardwebhooks.Secret{oldSecret},
		PublicKeys: []standardwebhooks.PublicKey{newKey.Public(), oldKey.Public()},
		Now:        func() time.Time { return now },
	})
	v1 := func(s standardwebhooks.Secret) string { return standardwebhooks.Sign(s, "msg_1", now, body) }
	v1a := func(k standardwebhooks.SigningKey) string {
		return standardwebhooks.SignAsymmetric(k, "msg_1", now, body)
	}
	for _, tt := range []struct {
		name string
		sig  string
		ok   bool
	}{
		{"v1a, the new key", v1a(newKey), true},
		{"v1a, the old key", v1a(oldKey), true},
		{"v1, the old secret", v1(oldSecret), true},
		{"v1a, another key", v1a(otherKey), false},
		{"v1, another secret", v1(otherSecret), false},
		{"other key and secret first, then the old key", v1(otherSecret) + " " + v1a(otherKey) + " " + v1a(oldKey), true},
		{"other key, then the old secret", v1a(otherKey) + " " + v1(oldSecret), true},
		{"all others", v1(otherSecret) + " " + v1a(otherKey) + " v2,abc", false},
	} {
		err := v.Verify(headers("msg_1", ts, tt.sig), body)
		if tt.ok && err != nil {
			t.Errorf("%s: %v, want success", tt.name, err)
		}
		if !tt.ok && !errors.Is(err, standardwebhooks.ErrInvalidSignature) {
			t.Errorf("%s: %v, want ErrInvalidSignature", tt.name, err)
		}
	}
}

// TestSignerSignsWithBothKinds: a Signer with secrets and signing keys
// sends one signature per key, v1 first; a receiver holding any one of
// the keys accepts the request, through the Handler.
func TestSignerSignsWithBothKinds(t *testing.T) {
	clock := newClock(time.Unix(1_800_000_000, 0))
	secret, key := rawSecret(t, 's', 32), mustSigningKey(t, vectorSigningKey)
	signer := newSigner(t, standardwebhooks.SignerConfig{
		Secrets:     []standardwebhooks.Secret{secret},
		SigningKeys: []standardwebhooks.SigningKey{key},
		Now:         clock.Now,
	})
	req, _ := http.NewRequest(http.MethodPost, "http://receiver.test/webhooks", bytes.NewReader(body))
	if err := signer.SignRequest(req, "msg_1", body); err != nil {
		t.Fatal(err)
	}
	sigs := strings.Fields(req.Header.Get(standardwebhooks.HeaderSignature))
	if len(sigs) != 2 || sigs[0] != standardwebhooks.Sign(secret, "msg_1", clock.Now(), body) || sigs[1] != standardwebhooks.SignAsymmetric(key, "msg_1", clock.Now(), body) {
		t.Fatalf("webhook-signature %q, want the v1 then the v1a signature", sigs)
	}
	for name, cfg := range map[string]standardwebhooks.VerifierConfig{
		"the secret only":     {Secrets: []standardwebhooks.Secret{secret}},
		"the public key only": {PublicKeys: []standardwebhooks.PublicKey{key.Public()}},
	} {
		cfg.Now = clock.Now
		next := &downstream{}
		h := newVerifier(t, cfg).Handler(next)
		r, _ := http.NewRequest(http.MethodPost, "http://receiver.test/webhooks", bytes.NewReader(body))
		r.Header = req.Header.Clone()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted || next.calls != 1 || !bytes.Equal(next.body, body) {
			t.Errorf("receiver with %s: %d, next ran %d times", name, w.Code, next.calls)
		}
	}
	// A Signer with signing keys only sends v1a signatures only.
	only := newSigner(t, standardwebhooks.SignerConfig{SigningKeys: []standardwebhooks.SigningKey{key}, Now: clock.Now})
	if err := only.SignRequest(req, "msg_1", body); err != nil {
		t.Fatal(err)
	}
	if got, want := req.Header.Get(standardwebhooks.HeaderSignature), standardwebhooks.SignAsymmetric(key, "msg_1", clock.Now(), body); got != want {
		t.Errorf("webhook-signature %q, want %q", got, want)
	}
}

// TestHandlerRefusesSignaturesOfAVersionWithoutKeysBeforeReadingBody: a
// Verifier with public keys only refuses a request signed v1 (and the
// reverse) from its headers, reading no body.
func TestHandlerRefusesSignaturesOfAVersionWithoutKeysBeforeReadingBody(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	secret, key := rawSecret(t, 's', 32), mustSigningKey(t, vectorSigningKey)
	for name, tc := range map[string]struct {
		cfg standardwebhooks.VerifierConfig
		sig string
	}{
		"public keys only, signed v1":  {standardwebhooks.VerifierConfig{PublicKeys: []standardwebhooks.PublicKey{key.Public()}}, standardwebhooks.Sign(secret, "msg_1", now, body)},
		"secrets only, signed v1a":     {standardwebhooks.VerifierConfig{Secrets: []standardwebhooks.Secret{secret}}, standardwebhooks.SignAsymmetric(key, "msg_1", now, body)},
		"public keys only, v1a junk":   {standardwebhooks.VerifierConfig{PublicKeys: []standardwebhooks.PublicKey{key.Public()}}, "v1a,c2hvcnQ="},
		"public keys only, v1a padded": {standardwebhooks.VerifierConfig{PublicKeys: []standardwebhooks.PublicKey{key.Public()}}, "v1a," + strings.Repeat("A", 88)},
	} {
		tc.cfg.Now = func() time.Time { return now }
		next := &downstream{}
		h := newVerifier(t, tc.cfg).Handler(next)
		r, _ := http.NewRequest(http.MethodPost, "http://receiver.test/webhooks", nil)
		cr := &countingReader{r: bytes.NewReader(body)}
		r.Body = io.NopCloser(cr)
		r.ContentLength = int64(len(body))
		r.Header = headers("msg_1", strconv.FormatInt(now.Unix(), 10), tc.sig)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized || next.calls != 0 || cr.n != 0 {
			t.Errorf("%s: %d, next ran %d times, %d body bytes read; want 401 from the headers alone", name, w.Code, next.calls, cr.n)
		}
	}
}

func TestParseAsymmetricKeys(t *testing.T) {
	key := mustSigningKey(t, vectorSigningKey)
	if got := key.Encode(); got != "whsk_"+vectorSigningKey {
		t.Errorf("Encode = %q, want %q (the 32-byte seed)", got, "whsk_"+vectorSigningKey)
	}
	for _, s := range []string{vectorPublicKey, vectorPublicKey[len("whpk_"):], " " + strings.TrimRight(vectorPublicKey, "=") + "\n"} {
		if pk, err := standardwebhooks.ParsePublicKey(s); err != nil || pk.Encode() != vectorPublicKey {
			t.Errorf("ParsePublicKey(%q) = %v, %v; want %s", s, pk, err, vectorPublicKey)
		}
	}
	seed, _ := base64.StdEncoding.DecodeString(vectorSigningKey)
	full := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed)) // the 64-byte private key
	for _, tt := range []struct{ name, s, mention string }{
		{"empty", "", "empty"},
		{"prefix only", "whsk_", "empty"},
		{"not base64", "whsk_not base64!", "base64"},
		{"a 64-byte private key", "whsk_" + full, "seed"},
		{"too short", "whsk_" + base64.StdEncoding.EncodeToString(seed[:31]), "32"},
		{"a public key", vectorPublicKey, "public"},
		{"a symmetric secret", vectorSecret, "whsec_"},
	} {
		_, err := standardwebhooks.ParseSigningKey(tt.s)
		if !errors.Is(err, standardwebhooks.ErrInvalidKey) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParseSigningKey, %s: %v, want ErrInvalidKey mentioning %q", tt.name, err, tt.mention)
		}
		if err != nil && len(tt.s) > 12 && strings.Contains(err.Error(), tt.s[6:]) {
			t.Errorf("ParseSigningKey, %s: the error echoes the key: %v", tt.name, err)
		}
	}
	for _, tt := range []struct{ name, s, mention string }{
		{"empty", "whpk_", "empty"},
		{"not base64", "whpk_****", "base64"},
		{"too long", "whpk_" + full, "32"},
		{"a signing key", "whsk_" + vectorSigningKey, "signing key"},
		{"a symmetric secret", vectorSecret, "whsec_"},
	} {
		_, err := standardwebhooks.ParsePublicKey(tt.s)
		if !errors.Is(err, standardwebhooks.ErrInvalidKey) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParsePublicKey, %s: %v, want ErrInvalidKey mentioning %q", tt.name, err, tt.mention)
		}
		if err != nil && strings.Contains(err.Error(), vectorSigningKey[:20]) {
			t.Errorf("ParsePublicKey, %s: the error echoes a signing key: %v", tt.name, err)
		}
	}
	// ParseSecret points to the asymmetric parsers.
	for _, s := range []string{vectorPublicKey, "whsk_" + vectorSigningKey} {
		if _, err := standardwebhooks.ParseSecret(s); !errors.Is(err, standardwebhooks.ErrInvalidKey) || !strings.Contains(err.Error(), "asymmetric") || !strings.Contains(err.Error(), "Parse") {
			t.Errorf("ParseSecret(%.8q…): %v, want ErrInvalidKey naming the asymmetric parsers", s, err)
		}
	}

	// NewSigningKey takes the seed, NewPublicKey the 32-byte key; both copy.
	k2, err := standardwebhooks.NewSigningKey(seed)
	if err != nil || k2.Encode() != key.Encode() {
		t.Errorf("NewSigningKey(seed) = %v, %v", k2.Encode() == key.Encode(), err)
	}
	if _, err := standardwebhooks.NewSigningKey(ed25519.NewKeyFromSeed(seed)); !errors.Is(err, standardwebhooks.ErrInvalidKey) {
		t.Errorf("NewSigningKey of a 64-byte private key: %v, want ErrInvalidKey (it takes the seed)", err)
	}
	pubBytes := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	pk, err := standardwebhooks.NewPublicKey(pubBytes)
	if err != nil || pk.Encode() != vectorPublicKey {
		t.Errorf("NewPublicKey = %v, %v; want %s", pk, err, vectorPublicKey)
	}
	pubBytes[0] ^= 1
	seed[0] ^= 1
	if pk.Encode() != vectorPublicKey || k2.Encode() != key.Encode() {
		t.Error("NewPublicKey or NewSigningKey keeps a reference to the caller's slice")
	}
	if _, err := standardwebhooks.NewPublicKey(nil); !errors.Is(err, standardwebhooks.ErrInvalidKey) {
		t.Errorf("NewPublicKey(nil): %v, want ErrInvalidKey", err)
	}

	// Generated keys round-trip; a signing key prints redacted.
	gen := standardwebhooks.GenerateSigningKey()
	if back := mustSigningKey(t, gen.Encode()); back.Encode() != gen.Encode() || !strings.HasPrefix(gen.Encode(), "whsk_") {
		t.Errorf("GenerateSigningKey does not round-trip: %q", gen.Encode())
	}
	if standardwebhooks.GenerateSigningKey().Encode() == gen.Encode() {
		t.Error("GenerateSigningKey returned the same key twice")
	}
	for _, f := range []string{key.String(), key.GoString()} {
		if strings.Contains(f, vectorSigningKey[:10]) || !strings.Contains(f, "redacted") {
			t.Errorf("formatted signing key %q is not redacted", f)
		}
	}
	if s := key.Public().Encode(); s != vectorPublicKey {
		t.Errorf("PublicKey.Encode = %q, want %q", s, vectorPublicKey)
	}
	var zk standardwebhooks.SigningKey
	var zp standardwebhooks.PublicKey
	if zk.Encode() != "" || zp.Encode() != "" || zk.Public().Encode() != "" || zk.String() != "standardwebhooks.SigningKey(none)" {
		t.Error("Encode, Public or String wrong for the zero keys")
	}
	if got := standardwebhooks.SignAsymmetric(zk, "msg_1", vectorTime, body); got != "" {
		t.Errorf("SignAsymmetric with the zero key = %q, want \"\"", got)
	}
}

func TestNewVerifierAndSignerTakeAsymmetricKeys(t *testing.T) {
	key := mustSigningKey(t, vectorSigningKey)
	for name, cfg := range map[string]standardwebhooks.VerifierConfig{
		"zero public key":               {PublicKeys: []standardwebhooks.PublicKey{key.Public(), {}}},
		"zero public key beside secret": {Secrets: []standardwebhooks.Secret{rawSecret(t, 's', 32)}, PublicKeys: []standardwebhooks.PublicKey{{}}},
	} {
		if v, err := standardwebhooks.NewVerifier(cfg); err == nil || v != nil {
			t.Errorf("%s: NewVerifier = %v, %v; want an error", name, v, err)
		}
	}
	if _, err := standardwebhooks.NewVerifier(standardwebhooks.VerifierConfig{PublicKeys: []standardwebhooks.PublicKey{key.Public()}}); err != nil {
		t.Errorf("a verifier with public keys only: %v", err)
	}
	if s, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{SigningKeys: []standardwebhooks.SigningKey{key, {}}}); err == nil || s != nil {
		t.Errorf("a signer with a zero signing key: %v, %v; want an error", s, err)
	}
	if _, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{SigningKeys: []standardwebhooks.SigningKey{key}}); err != nil {
		t.Errorf("a signer with signing keys only: %v", err)
	}
}
