package standardwebhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The three headers of a Standard Webhooks request, in the specification's
// spelling (net/http canonicalizes them as Webhook-Id and so on).
const (
	// HeaderID carries the message id: the same on every attempt of one
	// message, and therefore a natural idempotency key.
	HeaderID = "webhook-id"
	// HeaderTimestamp carries the time of the attempt, in whole seconds
	// since the Unix epoch; it changes on every attempt.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature carries one or more space-separated signatures,
	// each a version, a comma and the base64 signature ("v1,…").
	HeaderSignature = "webhook-signature"
)

// signatureVersion is the version tag of the symmetric (HMAC-SHA256)
// signatures this package produces and checks; the asymmetric ones are
// tagged "v1a". Signatures with any other tag are
// ignored when verifying.
const signatureVersion = "v1"

// maxIDLen is the longest message id, in bytes, a Signer signs and a
// Verifier accepts; it matches the longest idempotency key the geoidem
// middleware accepts.
const maxIDLen = 255

// ErrInvalidID is wrapped by the error SignRequest returns for a message id
// it will not sign.
var ErrInvalidID = errors.New("standardwebhooks: invalid message id")

// mac returns the base64 HMAC-SHA256 of id.timestamp.body.
func mac(secret Secret, id, timestamp string, body []byte) string {
	h := hmac.New(sha256.New, secret.key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// SignerConfig configures a Signer.
type SignerConfig struct {
	// Secrets sign every request with HMAC-SHA256 (v1), each of at
	// least 24 bytes. Each secret adds one signature to
	// webhook-signature, the first secret's first. To rotate a receiver's
	// secret without downtime, sign with the new and the old secret until
	// the receiver has switched, then drop the old one.
	Secrets []Secret

	// SigningKeys sign every request with ed25519 (v1a); each adds one
	// signature to webhook-signature, after those of the Secrets, the
	// first key's first. A Signer needs at least one Secret or
	// SigningKey. Rotate as with secrets: sign with the new and the old
	// key until every receiver holds the new public key.
	SigningKeys []SigningKey

	// Now returns the time of an attempt, written to webhook-timestamp.
	// Default time.Now. A test that fakes the sender's clock passes the
	// same clock here, so that it moves both.
	Now func() time.Time
}

// A Signer adds Standard Webhooks headers to outgoing requests. It is safe
// for concurrent use.
//
// A Signer must re-sign every attempt. A receiver rejects a timestamp more than its tolerance (usually five
// minutes) away from its clock, so a signature computed once and reused on
// every retry stops working as soon as the retries outlast the tolerance.
// Call [Signer.SignRequest] once per attempt, on that attempt's request,
// with the same id every time: the id stays stable (it is the receiver's
// idempotency key) while the timestamp and signature are fresh. With the
// geoidem client that is Config.PrepareAttempt, which the sender calls
// before every attempt:
//
//	signer, err := standardwebhooks.NewSigner(standardwebhooks.SignerConfig{Secrets: []standardwebhooks.Secret{secret}})
//	…
//	sender, err := client.New(http.DefaultClient, client.Config{
//		PrepareAttempt: func(req *http.Request, a client.Attempt) error {
//			return signer.SignRequest(req, a.Key, a.Body)
//		},
//	})
type Signer struct {
	secrets []Secret
	keys    []SigningKey
	now     func() time.Time
}

// NewSigner returns a Signer, or an error when cfg has neither a secret
// nor a signing key, a secret shorter than 24 bytes, or a
// zero SigningKey.
func NewSigner(cfg SignerConfig) (*Signer, error) {
	if len(cfg.Secrets) == 0 && len(cfg.SigningKeys) == 0 {
		return nil, errors.New("standardwebhooks: SignerConfig has no Secrets and no SigningKeys")
	}
	s := &Signer{now: cfg.Now}
	for i, sec := range cfg.Secrets {
		if len(sec.key) < minSigningSecretLen {
			return nil, fmt.Errorf("standardwebhooks: SignerConfig.Secrets[%d] is %d bytes long; signing secrets must be at least %d", i, len(sec.key), minSigningSecretLen)
		}
		s.secrets = append(s.secrets, sec)
	}
	for i, k := range cfg.SigningKeys {
		if k.isZero() {
			return nil, fmt.Errorf("standardwebhooks: SignerConfig.SigningKeys[%d] is the zero SigningKey", i)
		}
		s.keys = append(s.keys, k)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// SignRequest sets the three Standard Webhooks headers on req, replacing
// any already there: webhook-id to id, webhook-timestamp to the Signer's
// current time (read at this call) and webhook-signature to one v1
// signature per secret, then one v1a signature per signing key,
// space-separated. body must be exactly the bytes req sends; SignRequest
// does not read req.Body.
//
// Call it once per attempt, with the same id, as the [Signer]
// documentation shows: the id stays stable while the timestamp and the
// signature are fresh.
//
// It returns an error wrapping [ErrInvalidID], and leaves req unchanged,
// when id is empty, longer than 255 bytes, contains a byte outside
// printable ASCII, begins or ends with a space (HTTP would strip it, so the
// receiver would verify another id), or contains a full stop. The
// specification allows a full stop, and a [Verifier] accepts such ids from
// other senders; a Signer makes none, so that the signed content
// "id.timestamp.body" of its messages splits one way only. It returns an
// error when the clock reads before 1970.
//
// SignRequest reads and writes nothing of req but req.Header, so a sender
// on another transport signs with &http.Request{Header: h} and sends the
// three headers it finds in h.
func (s *Signer) SignRequest(req *http.Request, id string, body []byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	ts := s.now().Unix()
	if ts < 0 {
		return fmt.Errorf("standardwebhooks: the clock reads %d, before the Unix epoch", ts)
	}
	timestamp := strconv.FormatInt(ts, 10)
	sigs := make([]string, 0, len(s.secrets)+len(s.keys))
	for _, sec := range s.secrets {
		sigs = append(sigs, signatureVersion+","+mac(sec, id, timestamp, body))
	}
	for _, k := range s.keys {
		sigs = append(sigs, signatureVersionAsymmetric+","+edSign(k, id, timestamp, body))
	}
	h := req.Header
	if h == nil {
		h = make(http.Header)
		req.Header = h
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, timestamp)
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return nil
}

func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > maxIDLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidID, maxIDLen)
	case id[0] == ' ' || id[len(id)-1] == ' ':
		return fmt.Errorf("%w: begins or ends with a space", ErrInvalidID)
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c == '.':
			return fmt.Errorf("%w: contains a full stop at offset %d", ErrInvalidID, i)
		case c < 0x20 || c > 0x7e:
			return fmt.Errorf("%w: byte 0x%02x at offset %d is not printable ASCII", ErrInvalidID, c, i)
		}
	}
	return nil
}
