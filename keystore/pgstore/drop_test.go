package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore/pgstore"
)

// Drop removes every object a store created (relations and functions),
// whatever the schema holds besides, and refuses a name New would refuse.
func TestDropRemovesEveryObject(t *testing.T) {
	pool := newPool(t, 4, nil)
	ctx := testCtx(t)
	schema := newSchema(t, pool)
	cfg := pgstore.Config{Schema: schema, Table: "drop_me", ClientKeys: 10, PruneInterval: -1}
	s := newStore(t, pool, cfg)
	claim(t, s, "k", time.Minute, acquire)
	// A table of the team's own, beside the store's, stays.
	if _, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.drop_me_too (id int)`); err != nil {
		t.Fatal(err)
	}
	objects := func() []string {
		rows, err := pool.Query(ctx, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
			UNION ALL SELECT p.proname || '()' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
			ORDER BY 1`, schema)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(n, "pg_toast") {
				names = append(names, n)
			}
		}
		return names
	}
	if before := objects(); len(before) < 6 {
		t.Fatalf("the store created %q, want its table, index, migrations, client counts and claim function at least", before)
	}
	s.Close()
	if err := pgstore.Drop(ctx, pool, cfg); err != nil {
		t.Fatalf("Drop: %v", err)
	}
	if after := objects(); len(after) != 1 || after[0] != "drop_me_too" {
		t.Errorf("after Drop the schema holds %q, want only the team's own drop_me_too", after)
	}
	if err := pgstore.Drop(ctx, pool, cfg); err != nil {
		t.Errorf("Drop of a dropped store: %v, want nil (nothing left to drop)", err)
	}
	if err := pgstore.Drop(ctx, pool, pgstore.Config{Schema: schema, Table: strings.Repeat("x", 64)}); err == nil {
		t.Error("Drop of a table name New refuses: nil error")
	}
}
