package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

const keysUsage = `usage:
  geoidem keys get     -store STORE [-scope SCOPE] [-json] KEY
  geoidem keys release -store STORE [-scope SCOPE] [-force] KEY
  geoidem keys forget  -store STORE [-scope SCOPE] [-yes] KEY
  geoidem keys stats   -store STORE [-json]
STORE is redis://host:port/db, redis://h1:p1,h2:p2 (Cluster), postgres://… or
the http:// address of a memory store's admin listener (examples/ingest -admin-addr).
`

// keysFlags are the flags every keys subcommand takes.
type keysFlags struct {
	store, scope, redisPrefix, pgTable, pgSchema string
	storedKey, asJSON                            bool
	timeout                                      time.Duration
}

func keys(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	sub := args[0]
	switch sub {
	case "get", "release", "forget", "stats":
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, keysUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "geoidem keys: unknown subcommand %q\n%s", sub, keysUsage)
		return 2
	}
	fl := flag.NewFlagSet("geoidem keys "+sub, flag.ContinueOnError)
	fl.SetOutput(stderr)
	var f keysFlags
	fl.StringVar(&f.store, "store", "", "the key store: redis://host:port/db, redis://h1:p1,h2:p2 (Cluster), postgres://… or http://ADMIN-ADDR (required)")
	fl.StringVar(&f.redisPrefix, "redis-prefix", redisstore.DefaultKeyPrefix, "Redis: the key prefix")
	fl.StringVar(&f.pgTable, "pg-key-table", pgstore.DefaultTable, "PostgreSQL: the key store's table")
	fl.StringVar(&f.pgSchema, "pg-schema", "", "PostgreSQL: the table's schema (default: the search path)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	force, yes := new(bool), new(bool)
	if sub != "stats" {
		fl.StringVar(&f.scope, "scope", "POST /features", "the key's scope, as the middleware's Config.Scope returns it (default, middleware.DefaultScope: the method in upper case, a space, the host of a ServeMux host pattern, the path)")
		fl.BoolVar(&f.storedKey, "stored-key", false, "KEY is already a stored key (64 hexadecimal characters, as stats prints), not a client's key")
	}
	if sub == "get" || sub == "stats" {
		fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	}
	if sub == "release" {
		fl.BoolVar(force, "force", false, "free the key even though its lease still runs: the request holding it may be alive, and its answer will then not be recorded")
	}
	if sub == "forget" {
		fl.BoolVar(yes, "yes", false, "do not ask before deleting the record")
	}
	if err := fl.Parse(args[1:]); err != nil {
		return 2
	}
	wantArgs := 1
	if sub == "stats" {
		wantArgs = 0
	}
	if fl.NArg() != wantArgs {
		fmt.Fprintf(stderr, "geoidem keys %s: want %d argument(s) after the flags, got %q\n%s", sub, wantArgs, fl.Args(), keysUsage)
		return 2
	}
	if f.store == "" {
		fmt.Fprintf(stderr, "geoidem keys %s: -store is required\n", sub)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	admin, closeStore, err := openAdmin(ctx, f)
	if err != nil {
		fmt.Fprintf(stderr, "geoidem keys: %v\n", err)
		return 2
	}
	defer closeStore()

	if sub == "stats" {
		return stats(ctx, admin, f, stdout, stderr)
	}
	arg := fl.Arg(0)
	var key, stored, what string
	if f.storedKey {
		stored, what = arg, fmt.Sprintf("stored key %s", arg)
	} else {
		// The key as the middleware reads it from the header: quoted (an
		// RFC 9651 string) or bare, one key either way.
		var err error
		if key, err = middleware.ParseKey(arg); err != nil {
			fmt.Fprintf(stderr, "geoidem keys %s: %v\n", sub, err)
			return 2
		}
		stored, what = middleware.StoreKey(f.scope, key), fmt.Sprintf("key %q in scope %q", key, f.scope)
	}
	switch sub {
	case "get":
		e, err := admin.Inspect(ctx, stored)
		if err != nil {
			fmt.Fprintf(stderr, "geoidem keys get: %v\n", err)
			return 2
		}
		if f.asJSON {
			code := printJSON(stdout, stderr, keyEntry{key, keyIf(!f.storedKey, f.scope), stored, e})
			if code == 0 && e.State == keystore.Absent {
				whereToLook(stderr, f)
				return 1
			}
			return code
		}
		fmt.Fprintf(stdout, "%s (stored as %s)\n", what, stored)
		describe(stdout, e)
		if e.State == keystore.Absent {
			whereToLook(stdout, f)
			return 1
		}
		return 0
	case "release":
		e, err := admin.Free(ctx, stored, *force)
		switch {
		case err == nil:
			how := "its lease had run out " + ago(-e.LeaseRemaining)
			if !e.LeaseRunOut {
				how = fmt.Sprintf("its lease still ran (%v left) and -force freed it: if its request is alive, its answer will not be recorded", e.LeaseRemaining.Round(time.Millisecond))
			}
			fmt.Fprintf(stdout, "released %s: it was in flight, %s; the next delivery with the key runs its handler\n", what, how)
			return 0
		case errors.Is(err, adminhttp.ErrLeaseRunning):
			fmt.Fprintf(stdout, "not released: %s is in flight and its lease still runs (%v left): a request may still be working on it, and the lease ends by itself; -force frees it anyway\n",
				what, e.LeaseRemaining.Round(time.Millisecond))
		case errors.Is(err, adminhttp.ErrNotInFlight) && e.State == keystore.Completed && isUncertain(e.Record):
			// Held by geoidem proxy as uncertain: the operator has
			// checked the upstream, and the next delivery may run.
			if _, err := admin.Forget(ctx, stored); err != nil && !errors.Is(err, adminhttp.ErrNotCompleted) {
				fmt.Fprintf(stderr, "geoidem keys release: %v\n", err)
				return 2
			}
			fmt.Fprintf(stdout, "released %s: it was held as uncertain (the upstream may have run it); the next delivery with the key is forwarded again\n", what)
			return 0
		case errors.Is(err, adminhttp.ErrNotInFlight):
			fmt.Fprintf(stdout, "not released: %s is not in flight: %s\n", what, stateLine(e))
			if e.State == keystore.Absent {
				whereToLook(stdout, f)
			}
			if e.State == keystore.Completed {
				fmt.Fprintln(stdout, "a completed record is never released; 'geoidem keys forget' deletes it")
			}
		default:
			fmt.Fprintf(stderr, "geoidem keys release: %v\n", err)
			return 2
		}
		return 1
	case "forget":
		e, err := admin.Inspect(ctx, stored)
		if err != nil {
			fmt.Fprintf(stderr, "geoidem keys forget: %v\n", err)
			return 2
		}
		if e.State != keystore.Completed {
			fmt.Fprintf(stdout, "not forgotten: %s holds no completed record: %s\n", what, stateLine(e))
			if e.State == keystore.Absent {
				whereToLook(stdout, f)
			}
			return 1
		}
		if !*yes {
			fmt.Fprintf(stdout, "%s: %s\nforget this record? The next delivery with the key runs its handler again. [y/N] ", what, stateLine(e))
			line, _ := bufio.NewReader(stdin).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				fmt.Fprintln(stdout, "not forgotten")
				return 1
			}
		}
		e, err = admin.Forget(ctx, stored)
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "forgot %s: %s\n", what, stateLine(e))
			return 0
		case errors.Is(err, adminhttp.ErrNotCompleted):
			fmt.Fprintf(stdout, "not forgotten: %s changed meanwhile: %s\n", what, stateLine(e))
			return 1
		}
		fmt.Fprintf(stderr, "geoidem keys forget: %v\n", err)
		return 2
	}
	return 2
}

// whereToLook follows an absent key: a key looked up in another scope,
// or on another store, prefix or table than the receiver's, is never
// found, and that is far likelier than a key that never arrived.
func whereToLook(w io.Writer, f keysFlags) {
	if !f.storedKey {
		fmt.Fprintf(w, "check -scope: the receiver's scope for the key, by default its method and route path (\"POST /features\"); this looked in %q\n", f.scope)
	}
	where := "-store"
	switch {
	case strings.HasPrefix(f.store, "redis"):
		where = fmt.Sprintf("-store and -redis-prefix: this looked in %s under %q", redacted(f.store), f.redisPrefix)
	case strings.HasPrefix(f.store, "postgres"):
		where = fmt.Sprintf("-store, -pg-schema and -pg-key-table: this looked in %s, table %q", redacted(f.store), f.pgTable)
	case f.store != "":
		where = fmt.Sprintf("-store: this looked in %s", redacted(f.store))
	}
	fmt.Fprintf(w, "check %s; the receiver's store must be the one named\n", where)
}

// redacted is a store URL without its password.
func redacted(store string) string {
	if u, err := url.Parse(store); err == nil && u.User != nil {
		return u.Redacted()
	}
	return store
}

func keyIf(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// quiet turns off go-redis's maintenance notifications, whose handshake
// logs a line to stderr on every Redis that does not know them.
var quiet = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}

// openAdmin opens the store f names as a adminhttp.Admin, reading nothing
// and creating nothing until asked: no migration, no janitor, no eviction
// or persistence check.
func openAdmin(ctx context.Context, f keysFlags) (adminhttp.Admin, func(), error) {
	u, err := url.Parse(f.store)
	if err != nil {
		return nil, nil, fmt.Errorf("-store: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
		return &adminhttp.Client{URL: f.store}, func() {}, nil
	case "redis", "rediss":
		var client redis.UniversalClient
		if strings.Contains(u.Host, ",") {
			copts := &redis.ClusterOptions{Addrs: strings.Split(u.Host, ",")}
			if u.User != nil {
				copts.Username = u.User.Username()
				copts.Password, _ = u.User.Password()
			}
			copts.MaintNotificationsConfig = quiet
			client = redis.NewClusterClient(copts)
		} else {
			ropts, err := redis.ParseURL(f.store)
			if err != nil {
				return nil, nil, fmt.Errorf("-store: %w", err)
			}
			ropts.MaintNotificationsConfig = quiet
			client = redis.NewClient(ropts)
		}
		store, err := redisstore.New(client, redisstore.Config{KeyPrefix: f.redisPrefix, Eviction: redisstore.SkipEvictionCheck, Durability: redisstore.AcceptVolatile})
		if err != nil {
			client.Close()
			return nil, nil, err
		}
		if err := client.Ping(ctx).Err(); err != nil {
			client.Close()
			return nil, nil, fmt.Errorf("redis: %w", err)
		}
		return store, func() { client.Close() }, nil
	case "postgres", "postgresql":
		pool, err := pgxpool.New(ctx, f.store)
		if err != nil {
			return nil, nil, fmt.Errorf("-store: %w", err)
		}
		store, err := pgstore.New(ctx, pool, pgstore.Config{Schema: f.pgSchema, Table: f.pgTable, SkipMigrate: true, PruneInterval: -1})
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		if err := pool.Ping(ctx); err != nil {
			store.Close()
			pool.Close()
			return nil, nil, fmt.Errorf("postgres: %w", err)
		}
		return store, func() { store.Close(); pool.Close() }, nil
	}
	return nil, nil, fmt.Errorf("-store %q: want redis://…, postgres://… or http://ADMIN-ADDR", f.store)
}

// recordOf is e's record decoded: the zero Record for bytes that are not
// a record encoding.
func recordOf(e adminhttp.Entry) record.Record {
	rec, _ := record.Decode(e.Record)
	return rec
}

// stateLine is an entry's state in one line.
func stateLine(e adminhttp.Entry) string {
	switch e.State {
	case keystore.InFlight:
		if e.LeaseRunOut {
			return "in flight, its lease ran out " + ago(-e.LeaseRemaining) + " (its holder is gone or stalled; the next delivery takes it over, 'geoidem keys release' frees it now)"
		}
		return fmt.Sprintf("in flight, %v of its lease left", e.LeaseRemaining.Round(time.Millisecond))
	case keystore.Completed:
		if isUncertain(e.Record) {
			return fmt.Sprintf("uncertain: geoidem proxy sent the request and got no answer to trust, so the upstream may have run it; held %v more, every retry answered 503; check the upstream, then 'geoidem keys release' lets the next delivery run", e.RetentionRemaining.Round(time.Second))
		}
		return fmt.Sprintf("completed: status %d, %d header field(s), body %d bytes, kept %v more", recordOf(e).StatusCode, len(recordOf(e).Header), len(recordOf(e).Body), e.RetentionRemaining.Round(time.Second))
	case keystore.Released:
		return "released: its request failed and gave the key back; the next delivery runs"
	}
	return "absent: never claimed, or its record has expired"
}

func ago(d time.Duration) string {
	if d <= 0 {
		return "just now"
	}
	return d.Round(time.Millisecond).String() + " ago"
}

// describe prints an entry for get.
func describe(w io.Writer, e adminhttp.Entry) {
	fmt.Fprintf(w, "state: %s\n", stateLine(e))
	if e.State == keystore.InFlight || e.State == keystore.Completed {
		fmt.Fprintf(w, "fingerprint: %s\n", hex.EncodeToString(e.Fingerprint[:]))
	}
	if e.State != keystore.Completed {
		return
	}
	names := make([]string, 0, len(recordOf(e).Header))
	for k := range recordOf(e).Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range recordOf(e).Header[k] {
			fmt.Fprintf(w, "header: %s: %s\n", k, v)
		}
	}
}

func stats(ctx context.Context, admin adminhttp.Admin, f keysFlags, stdout, stderr io.Writer) int {
	s, err := admin.Summarize(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "geoidem keys stats: %v\n", err)
		return 2
	}
	if f.asJSON {
		return printJSON(stdout, stderr, s)
	}
	fmt.Fprintf(stdout, "in flight: %d (%d with their lease run out)\ncompleted: %d\nbytes: %d\n", s.InFlight, s.LeaseRunOut, s.Completed, s.Bytes)
	switch {
	case s.Oldest == "":
		fmt.Fprintln(stdout, "oldest: none")
	case s.OldestState == keystore.InFlight && s.OldestRemaining <= 0:
		fmt.Fprintf(stdout, "oldest: %s, in flight, its lease ran out %s\n", s.Oldest, ago(-s.OldestRemaining))
	case s.OldestState == keystore.InFlight:
		fmt.Fprintf(stdout, "oldest: %s, in flight, %v of its lease left\n", s.Oldest, s.OldestRemaining.Round(time.Millisecond))
	default:
		fmt.Fprintf(stdout, "oldest: %s, completed, kept %v more\n", s.Oldest, s.OldestRemaining.Round(time.Second))
	}
	return 0
}

// keyEntry is what `keys get -json` prints: the key, its scope and the
// stored key, then the fields of the entry's JSON (adminhttp.Entry's).
type keyEntry struct {
	key, scope, stored string
	entry              adminhttp.Entry
}

func (k keyEntry) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Key       string `json:"key,omitempty"`
		Scope     string `json:"scope,omitempty"`
		StoredKey string `json:"stored_key"`
	}{k.key, k.scope, k.stored})
	if err != nil {
		return nil, err
	}
	entry, err := json.Marshal(k.entry)
	if err != nil {
		return nil, err
	}
	// {"key":…,"stored_key":…} and {"state":…,…} make one object.
	return append(append(head[:len(head)-1], ','), entry[1:]...), nil
}

func printJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "geoidem keys: %v\n", err)
		return 2
	}
	return 0
}
