package pgstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// names holds the quoted, schema-qualified names of a store's objects.
type names struct {
	qualified string // unquoted schema.table, for messages and the lock key
	table     string
	seq       string
	seqLit    string // seq as a string literal, for nextval
	index     string
	versions  string
	clients   string
	shards    string
	claimFn   string // the function of a claim's first statement
	claimRow  string // the type of its rows
}

func newNames(schema, table string) (names, error) {
	if table == "" {
		return names{}, errors.New("pgstore: empty table name")
	}
	if len(table) > maxTableLen {
		return names{}, fmt.Errorf("pgstore: table name %q is longer than %d bytes", table, maxTableLen)
	}
	if len(schema) > 63 {
		return names{}, fmt.Errorf("pgstore: schema name %q is longer than 63 bytes", schema)
	}
	for _, s := range []string{schema, table} {
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			return names{}, fmt.Errorf("pgstore: name %q is not valid UTF-8 without NUL", s)
		}
	}
	ident := func(name string) string {
		if schema == "" {
			return pgx.Identifier{name}.Sanitize()
		}
		return pgx.Identifier{schema, name}.Sanitize()
	}
	n := names{
		qualified: table,
		table:     ident(table),
		seq:       ident(table + "_token_seq"),
		index:     pgx.Identifier{table + "_expires_at_idx"}.Sanitize(), // an index lives in its table's schema
		versions:  ident(table + "_migrations"),
		clients:   ident(table + "_clients"),
		shards:    ident(table + "_client_shards"),
		claimFn:   ident(table + "_claim"),
		claimRow:  ident(table + "_claim_row"),
	}
	if schema != "" {
		n.qualified = schema + "." + table
	}
	n.seqLit = "'" + strings.ReplaceAll(n.seq, "'", "''") + "'"
	return n, nil
}

func (n names) expand(sql string) string {
	return strings.NewReplacer(
		"{{table}}", n.table,
		"{{seq}}", n.seq,
		"{{seqlit}}", n.seqLit,
		"{{index}}", n.index,
		"{{versions}}", n.versions,
		"{{clients}}", n.clients,
		"{{shards}}", n.shards,
		"{{claimfn}}", n.claimFn,
		"{{claimrow}}", n.claimRow,
		"{{nshards}}", strconv.Itoa(countShards),
		"{{takeover}}", takeoverSQL,
	).Replace(sql)
}
