package pgstore_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// The claim function returns rows of a named composite type, whose row
// description the database takes from its type cache, not OUT parameters
// (RETURNS TABLE), whose row description it builds again from the
// function's catalog entry on every call: the cost of every claim's first
// statement, a replay's included.
func TestClaimFunctionReturnsItsRowType(t *testing.T) {
	pool := newPool(t, 2, nil)
	schema := newSchema(t, pool)
	s := newStore(t, pool, pgstore.Config{Schema: schema, Table: "rowtype"})
	claim(t, s, "k", time.Minute, acquire)
	var rettype string
	var ownType, outParams bool
	err := pool.QueryRow(testCtx(t), `SELECT p.prorettype::regtype::text, coalesce(p.prorettype = to_regtype($2), false), p.proallargtypes IS NOT NULL
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND p.proname = 'rowtype_claim'`, schema, pgx.Identifier{schema, "rowtype_claim_row"}.Sanitize()).Scan(&rettype, &ownType, &outParams)
	if err != nil {
		t.Fatal(err)
	}
	if !ownType || outParams {
		t.Errorf("the claim function returns %s (OUT parameters: %v), want rowtype_claim_row and none", rettype, outParams)
	}
	claim(t, s, "k", time.Minute, keystore.InFlight)
}
