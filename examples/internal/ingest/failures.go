package ingest

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// Transient reports whether a failed feature write may succeed if the
// sender retries: the one rule by which the ingest handler answers a store
// error, documented in the README ("Permanent or transient failures").
// Transient errors are answered 503 with Retry-After, so the middleware
// releases the key and the sender's retry runs the handler again; every
// other error is permanent: answered 422 and recorded, so every retry is
// answered the same and the sender stops.
//
// It is the library's rule for PostgreSQL ([pgstore.Transient]) and for
// Redis ([redisstore.Transient]), plus the in-memory feature store being
// full (errStoreFull, transient); a request larger than the whole in-memory
// store (errTooLarge) is permanent, as is every error they do not know.
func Transient(err error) bool {
	return errors.Is(err, errStoreFull) || pgstore.Transient(err) || redisstore.Transient(err)
}

// refusal is what the 422 of a permanent failure says: the database's own
// message for a PostgreSQL error (its SQLSTATE and text, never a
// connection string), a fixed text otherwise.
func refusal(err error) string {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "XX000" && strings.HasPrefix(pgErr.File, "lwgeom"):
		return "PostGIS refused the geometry: " + pgErr.Message
	case pgErr != nil:
		return "the database refused the features (SQLSTATE " + pgErr.Code + "): " + pgErr.Message
	case errors.Is(err, errTooLarge):
		return errTooLarge.Error()
	}
	return "the feature store refused the features; the error is logged"
}
