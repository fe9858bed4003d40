package pgstore

import (
	"encoding/binary"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// claimRow receives the row of fastClaimSQL or claimSQL: acquired,
// took_over, token, fingerprint, status, header, body, remaining. It is a
// [pgx.RowScanner]: the row's binary values are decoded in place, without
// pgx's scan plans and the allocations of one destination per column; a row
// in any other format (a pool whose default exec mode is the simple
// protocol, say) goes through Rows.Scan.
type claimRow struct {
	acquired, tookOver bool
	token, remaining   int64
	fp                 keystore.Fingerprint
	fpNull             bool
	status             int32
	statusNull         bool
	header             http.Header // nil for a NULL header
	body               []byte
	// rec is the record, status, header and body encoded as record.Append
	// writes them, when scanRow could read it from the row's bytes; then
	// header and body are not set.
	rec []byte
}

// claimColumns are the types of a claim statement's columns, in order.
var claimColumns = [8]uint32{pgtype.BoolOID, pgtype.BoolOID, pgtype.Int8OID, pgtype.ByteaOID,
	pgtype.Int4OID, pgtype.ByteaOID, pgtype.ByteaOID, pgtype.Int8OID}

// ScanRow implements pgx.RowScanner.
func (r *claimRow) ScanRow(rows pgx.Rows) error { return r.scanRow(rows, nil) }

// scanRow decodes a claim row. With n non-nil the row starts with one more
// column, a bigint stored in *n: the number of the request in a batch.
func (r *claimRow) scanRow(rows pgx.Rows, n *int64) error {
	fds, v := rows.FieldDescriptions(), rows.RawValues()
	off := 0
	if n != nil {
		off = 1
	}
	if len(fds) != off+len(claimColumns) || len(v) != len(fds) {
		return fmt.Errorf("pgstore: claim returned %d columns, want %d", len(fds), off+len(claimColumns))
	}
	for i, fd := range fds {
		want := uint32(pgtype.Int8OID)
		if i >= off {
			want = claimColumns[i-off]
		}
		if fd.Format != pgtype.BinaryFormatCode || fd.DataTypeOID != want {
			return r.scan(rows, n)
		}
	}
	if n != nil {
		if len(v[0]) != 8 {
			return fmt.Errorf("pgstore: claim returned a malformed row")
		}
		*n = int64(binary.BigEndian.Uint64(v[0]))
		v = v[1:]
	}
	if len(v[0]) != 1 || len(v[1]) != 1 || len(v[2]) != 8 || len(v[7]) != 8 || (v[4] != nil && len(v[4]) != 4) {
		return fmt.Errorf("pgstore: claim returned a malformed row")
	}
	r.acquired, r.tookOver = v[0][0] != 0, v[1][0] != 0
	r.token, r.remaining = int64(binary.BigEndian.Uint64(v[2])), int64(binary.BigEndian.Uint64(v[7]))
	if err := r.setFingerprint(v[3]); err != nil {
		return err
	}
	r.statusNull, r.rec = v[4] == nil, nil
	if !r.statusNull {
		r.status = int32(binary.BigEndian.Uint32(v[4]))
		if r.rec = encodedRecord(r.status, v[5], v[6]); r.rec != nil {
			r.header, r.body = nil, nil
			return nil
		}
	}
	if err := r.setHeader(v[5]); err != nil {
		return err
	}
	if len(v[6]) > 0 { // an empty body is nil, as record.Decode returns it
		// The row's values live in the connection's read buffer.
		r.body = append(make([]byte, 0, len(v[6])), v[6]...)
	}
	return nil
}

// encodedRecord returns the record of a completed row, in one
// allocation: the status, as record.Append writes it, then the header
// column, which holds record.AppendHeader's encoding (a NULL one, no
// fields), then the body. It is what decoding the columns and encoding
// them again would write when the result is a record encoding exactly as
// record.Append writes it (record.Check); for any other bytes it returns
// nil, and the columns go the long way.
func encodedRecord(status int32, header, body []byte) []byte {
	rec := make([]byte, 0, binary.MaxVarintLen64+max(len(header), 1)+len(body))
	rec = binary.AppendVarint(rec, int64(status))
	if header == nil {
		rec = append(rec, 0)
	} else {
		rec = append(rec, header...)
	}
	rec = append(rec, body...)
	if _, err := record.Check(rec); err != nil {
		return nil
	}
	return rec
}

// scan decodes the row through pgx's scan plans.
func (r *claimRow) scan(rows pgx.Rows, n *int64) error {
	var (
		fpb, header []byte
		status      *int32
	)
	dest := []any{&r.acquired, &r.tookOver, &r.token, &fpb, &status, &header, &r.body, &r.remaining}
	if n != nil {
		dest = append([]any{n}, dest...)
	}
	r.rec = nil
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	if len(r.body) == 0 {
		r.body = nil
	}
	if err := r.setFingerprint(fpb); err != nil {
		return err
	}
	r.statusNull = status == nil
	if status != nil {
		r.status = *status
	}
	return r.setHeader(header)
}

func (r *claimRow) setFingerprint(b []byte) error {
	r.fpNull = len(b) == 0 // NULL, or a fence row's empty fingerprint (see releaseSQL)
	if !r.fpNull && len(b) != len(r.fp) {
		return fmt.Errorf("pgstore: claim: stored fingerprint has %d bytes, want %d", len(b), len(r.fp))
	}
	copy(r.fp[:], b)
	return nil
}

func (r *claimRow) setHeader(b []byte) error {
	h, err := decodeHeader(b)
	r.header = h
	return err
}

// bytea is a bytea argument that pgx encodes through pgtype.BytesValuer
// when passed as a pointer, without boxing a copy of the slice; nil is
// NULL.
type bytea []byte

// BytesValue implements pgtype.BytesValuer.
func (b *bytea) BytesValue() ([]byte, error) { return *b, nil }

// params holds the arguments of one statement, passed to pgx as pointers to
// its fields: with the statement's parameter types known from its cached
// description (see Store.typedArgs), pgx encodes them without the
// allocation of boxing each value and of the argument slice.
type params struct {
	key, client       pgtype.Text
	token, us, token2 pgtype.Int8
	window            pgtype.Int8
	status, bound     pgtype.Int4
	fpArr             keystore.Fingerprint
	fp, header, body  bytea
	args              [7]any
}

// claim returns the arguments of a claim statement: key, fingerprint, lease
// in microseconds, the caller's token.
func (p *params) claim(typed bool, key string, fp keystore.Fingerprint, us, token int64) []any {
	p.fpArr = fp
	if !typed {
		p.args = [7]any{key, p.fpArr[:], us, token}
		return p.args[:4]
	}
	p.key = pgtype.Text{String: key, Valid: true}
	p.fp = p.fpArr[:]
	p.us = pgtype.Int8{Int64: us, Valid: true}
	p.token2 = pgtype.Int8{Int64: token, Valid: true}
	p.args = [7]any{&p.key, &p.fp, &p.us, &p.token2}
	return p.args[:4]
}

// claimCounted returns the arguments of a claim statement for a bounded
// client: those of claim, then the client, the bound and the window in
// microseconds.
func (p *params) claimCounted(typed bool, key string, fp keystore.Fingerprint, us, token int64, client string, bound int32, window int64) []any {
	p.claim(typed, key, fp, us, token)
	if !typed {
		p.args[4], p.args[5], p.args[6] = client, bound, window
		return p.args[:7]
	}
	p.client = pgtype.Text{String: client, Valid: true}
	p.bound = pgtype.Int4{Int32: bound, Valid: true}
	p.window = pgtype.Int8{Int64: window, Valid: true}
	p.args[4], p.args[5], p.args[6] = &p.client, &p.bound, &p.window
	return p.args[:7]
}

// complete returns the arguments of completeSQL.
func (p *params) complete(typed bool, key string, token int64, status int32, header, body []byte, us int64) []any {
	if !typed {
		p.args = [7]any{key, token, status, header, body, us}
		return p.args[:6]
	}
	p.key = pgtype.Text{String: key, Valid: true}
	p.token = pgtype.Int8{Int64: token, Valid: true}
	p.status = pgtype.Int4{Int32: status, Valid: true}
	p.header, p.body = header, body
	p.us = pgtype.Int8{Int64: us, Valid: true}
	p.args = [7]any{&p.key, &p.token, &p.status, &p.header, &p.body, &p.us}
	return p.args[:6]
}
