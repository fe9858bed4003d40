package testkit

import "os"

// SharedPostgresEnv names the environment variable that gives the
// PostgreSQL the tests share: a postgres:// URL on loopback.
const SharedPostgresEnv = "GEOIDEM_TEST_POSTGRES"

// SharedPostgresURL is the PostgreSQL the tests share (each in a schema,
// table or database of its own): $GEOIDEM_TEST_POSTGRES, or the loopback
// server with trust authentication and a database "test" that
// scripts/services starts.
func SharedPostgresURL() string {
	if u := os.Getenv(SharedPostgresEnv); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}
