package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore/redisstore"
)

// A server with no AOF and no RDB save points keeps nothing across a
// restart: New refuses it unless the caller accepts that.
func TestNewRefusesVolatileServer(t *testing.T) {
	t.Parallel()
	client := privateClient(t, privateServer(t)) // --save "" --appendonly no
	if s, err := redisstore.New(client, redisstore.Config{}); err == nil {
		t.Fatalf("New on a server with appendonly no and no save points = %v, nil; want an error", s)
	}
}

// New's decision for each persistence a server can have, under each
// Durability: refused (an error wrapping ErrNotDurable), accepted silently,
// or accepted with a warning through Config.Logger.
func TestNewChecksPersistence(t *testing.T) {
	t.Parallel()
	const (
		ok     = "ok"
		warn   = "warn"
		refuse = "refuse"
	)
	noConfig := []string{"--rename-command", "CONFIG", ""}
	for _, tc := range []struct {
		name  string
		extra []string // after startServer's --save "" --appendonly no
		// persistence is what New read with RefuseVolatile (Persistence).
		persistence string
		// The decision under RefuseVolatile (the default) and RequireAOF;
		// AcceptVolatile is always ok and silent.
		dflt, requireAOF string
		// errWords are in the default's refusal or warning.
		errWords []string
	}{
		{name: "Volatile", persistence: `appendonly no, save ""`, dflt: refuse, requireAOF: refuse,
			errWords: []string{"would lose records on a restart", `appendonly no, save "" keeps nothing`, "every completed record and every claim", "AcceptVolatile"}},
		{name: "AOFAlways", extra: []string{"--appendonly", "yes", "--appendfsync", "always"},
			persistence: "appendonly yes, appendfsync always", dflt: ok, requireAOF: ok},
		{name: "AOFEverysec", extra: []string{"--appendonly", "yes", "--appendfsync", "everysec"},
			persistence: "appendonly yes, appendfsync everysec", dflt: ok, requireAOF: ok},
		{name: "AOFFsyncNo", extra: []string{"--appendonly", "yes", "--appendfsync", "no"},
			persistence: "appendonly yes, appendfsync no", dflt: warn, requireAOF: refuse,
			errWords: []string{"appendfsync no", "host crash"}},
		{name: "RDBOnly", extra: []string{"--save", "60 1"},
			persistence: `appendonly no, save "60 1"`, dflt: warn, requireAOF: refuse,
			errWords: []string{"RDB snapshots", "since the last snapshot", `save \"60 1\"`}},
		// Where CONFIG is not allowed, INFO persistence tells whether AOF
		// is on, but not the save points nor the fsync policy.
		{name: "NoConfigAOF", extra: append([]string{"--appendonly", "yes"}, noConfig...),
			persistence: "appendonly yes (from INFO persistence; appendfsync unknown)", dflt: ok, requireAOF: ok},
		{name: "NoConfigVolatile", extra: noConfig,
			persistence: "appendonly no (from INFO persistence; save points unknown)", dflt: refuse, requireAOF: refuse,
			errWords: []string{"nothing shows that it keeps anything", "allow CONFIG GET"}},
		{name: "NoConfigRDB", extra: append([]string{"--save", "60 1"}, noConfig...),
			persistence: "appendonly no (from INFO persistence; save points unknown)", dflt: refuse, requireAOF: refuse,
			errWords: []string{"nothing shows that it keeps anything", "allow CONFIG GET"}},
		// A server that answers but allows neither: nothing shows it keeps
		// anything.
		{name: "NoConfigNoInfo", extra: append([]string{"--appendonly", "yes", "--rename-command", "INFO", ""}, noConfig...),
			dflt: refuse, requireAOF: refuse, errWords: []string{"cannot be read", "unknown command"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := privateClient(t, privateServer(t, tc.extra...))
			for _, c := range []struct {
				mode redisstore.Durability
				want string
			}{{redisstore.RefuseVolatile, tc.dflt}, {redisstore.RequireAOF, tc.requireAOF}, {redisstore.AcceptVolatile, ok}} {
				log, buf := logBuffer()
				s, err := redisstore.New(client, redisstore.Config{Durability: c.mode, Eviction: redisstore.SkipEvictionCheck, Logger: log})
				got := ok
				switch {
				case err != nil:
					got = refuse
				case buf.Len() != 0:
					got = warn
				}
				if got != c.want {
					t.Errorf("Durability %d: New: %v, log %q: %s, want %s", c.mode, err, buf.String(), got, c.want)
					continue
				}
				if got == refuse && !errors.Is(err, redisstore.ErrNotDurable) {
					t.Errorf("Durability %d: New: %v, want an error wrapping ErrNotDurable", c.mode, err)
				}
				if got == warn && !strings.Contains(buf.String(), "level=WARN") {
					t.Errorf("Durability %d: log %q, want a warning", c.mode, buf.String())
				}
				if c.mode == redisstore.RefuseVolatile {
					msg := buf.String()
					if err != nil {
						msg = err.Error()
					}
					for _, w := range tc.errWords {
						if !strings.Contains(msg, w) {
							t.Errorf("default New said %q, want it to say %q", msg, w)
						}
					}
					if s != nil && redisstore.Persistence(s) != tc.persistence {
						t.Errorf("Persistence() = %q, want %q", redisstore.Persistence(s), tc.persistence)
					}
				}
				if c.mode == redisstore.AcceptVolatile && redisstore.Persistence(s) != "" {
					t.Errorf("AcceptVolatile: Persistence() = %q, want \"\" (nothing read)", redisstore.Persistence(s))
				}
			}
		})
	}
}

// With a Cluster client New reads every node and judges by the weakest:
// the test cluster runs without persistence, so New names a node.
func TestNewChecksPersistenceOfEveryClusterNode(t *testing.T) {
	t.Parallel()
	client := clusterClient(t)
	_, err := redisstore.New(client, redisstore.Config{})
	if !errors.Is(err, redisstore.ErrNotDurable) {
		t.Fatalf("New on a Cluster without persistence: %v, want ErrNotDurable", err)
	}
	named := false
	for _, addr := range clusterAddrs(t) {
		named = named || strings.Contains(err.Error(), addr+`: appendonly no, save ""`)
	}
	if !named {
		t.Errorf("New on a Cluster without persistence: %v, want the node's address and persistence", err)
	}
	if _, err := redisstore.New(client, redisstore.Config{Durability: redisstore.AcceptVolatile}); err != nil {
		t.Errorf("New on a Cluster with AcceptVolatile: %v", err)
	}
}

// A Redis that cannot be reached at New cannot be checked: by default New
// warns (the store works once Redis is back); RequireAOF asks for proof.
func TestNewWithUnreachablePersistence(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	log, buf := logBuffer()
	s, err := redisstore.New(client, redisstore.Config{Eviction: redisstore.SkipEvictionCheck, Logger: log})
	if err != nil {
		t.Fatalf("New on an unreachable Redis with the default Durability: %v, want a store", err)
	}
	if redisstore.Persistence(s) != "" || !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "could not read Redis persistence") {
		t.Fatalf("Persistence() %q, log %q: want none and a warning", redisstore.Persistence(s), buf.String())
	}
	if _, err := redisstore.New(client, redisstore.Config{Eviction: redisstore.SkipEvictionCheck, Durability: redisstore.RequireAOF}); !errors.Is(err, redisstore.ErrNotDurable) {
		t.Fatalf("New on an unreachable Redis with RequireAOF: %v, want ErrNotDurable", err)
	}
}

func TestNewRejectsUnknownDurability(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: standaloneAddr})
	defer client.Close()
	if s, err := redisstore.New(client, redisstore.Config{Durability: 99}); err == nil || !strings.Contains(err.Error(), "Durability") {
		t.Fatalf("New with Durability 99 = %v, %v; want an error naming Durability", s, err)
	}
}

// With several nodes (a Ring here, read like a Cluster's) New judges by the
// weakest node and names it.
func TestNewJudgesByTheWeakestNode(t *testing.T) {
	t.Parallel()
	always := privateServer(t, "--appendonly", "yes", "--appendfsync", "always")
	for _, tc := range []struct {
		name  string
		extra []string
		want  string // "refuse", "warn" or "ok"
		words string // in the error, the warning or Persistence()
	}{
		{"Volatile", nil, "refuse", `appendonly no, save ""`},
		{"RDBOnly", []string{"--save", "60 1"}, "warn", `appendonly no, save \"60 1\"`},
		{"AOFEverysec", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, "ok", "appendonly yes, appendfsync everysec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			weak := privateServer(t, tc.extra...)
			ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"always": always.addr, "weak": weak.addr}})
			t.Cleanup(func() { ring.Close() })
			log, buf := logBuffer()
			s, err := redisstore.New(ring, redisstore.Config{Eviction: redisstore.SkipEvictionCheck, Logger: log})
			var said string
			switch tc.want {
			case "refuse":
				if !errors.Is(err, redisstore.ErrNotDurable) {
					t.Fatalf("New: %v, want ErrNotDurable", err)
				}
				said = err.Error()
			case "warn":
				if err != nil || !strings.Contains(buf.String(), "level=WARN") {
					t.Fatalf("New: %v, log %q; want a store and a warning", err, buf.String())
				}
				said = buf.String()
			default:
				if err != nil || buf.Len() != 0 {
					t.Fatalf("New: %v, log %q; want a store and no warning", err, buf.String())
				}
				said = redisstore.Persistence(s)
			}
			if !strings.Contains(said, weak.addr+": "+tc.words) {
				t.Errorf("New said %q, want it to name the weakest node: %q", said, weak.addr+": "+tc.words)
			}
		})
	}
}

// Where an ACL forbids CONFIG (as managed services do), New reads INFO
// persistence; where it forbids INFO too (-@dangerous), nothing shows that
// the server keeps anything, and New refuses.
func TestNewChecksPersistenceUnderACL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, rules string
		extra       []string
		want        string // "" for a store; else words of the refusal
		persistence string
	}{
		{"NoConfigAOF", "+@all -config", []string{"--appendonly", "yes"}, "", "appendonly yes (from INFO persistence; appendfsync unknown)"},
		{"NoConfigVolatile", "+@all -config", nil, "nothing shows that it keeps anything", ""},
		{"NoDangerousAOF", "+@all -@dangerous", []string{"--appendonly", "yes"}, "cannot be read", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := privateServer(t, tc.extra...)
			admin := privateClient(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			args := []any{"acl", "setuser", "app", "on", ">secret", "~*", "&*"}
			for _, r := range strings.Fields(tc.rules) {
				args = append(args, r)
			}
			if err := admin.Do(ctx, args...).Err(); err != nil {
				t.Fatalf("ACL SETUSER: %v", err)
			}
			app := redis.NewClient(&redis.Options{Addr: srv.addr, Username: "app", Password: "secret"})
			t.Cleanup(func() { app.Close() })
			if err := app.ConfigGet(ctx, "appendonly").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
				t.Fatalf("CONFIG GET as the restricted user: %v, want NOPERM", err)
			}
			s, err := redisstore.New(app, redisstore.Config{Eviction: redisstore.SkipEvictionCheck})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v, want a store", err)
			case tc.want == "":
				if redisstore.Persistence(s) != tc.persistence {
					t.Errorf("Persistence() = %q, want %q", redisstore.Persistence(s), tc.persistence)
				}
			case !errors.Is(err, redisstore.ErrNotDurable) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("New: %v, want ErrNotDurable saying %q", err, tc.want)
			}
		})
	}
}

// A transient error reply (BUSY: a script runs past busy-reply-threshold)
// is not a refusal: New warns, as for an unreachable Redis, rather than
// failing for good.
func TestNewWithBusyServerWarns(t *testing.T) {
	t.Parallel()
	srv := privateServer(t, "--busy-reply-threshold", "50")
	client := privateClient(t, srv) // connected (one idle connection) before the script starts
	script := privateClient(t, srv)
	go script.Eval(context.Background(), "while true do end", nil) // until SCRIPT KILL
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for !strings.HasPrefix(fmt.Sprint(client.Get(ctx, "x").Err()), "BUSY") {
		if ctx.Err() != nil {
			t.Fatal("the script never made the server BUSY")
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer client.ScriptKill(context.Background())
	log, buf := logBuffer()
	if _, err := redisstore.New(client, redisstore.Config{Eviction: redisstore.SkipEvictionCheck, Logger: log}); err != nil {
		t.Fatalf("New on a BUSY server: %v, want a store and a warning", err)
	}
	if !strings.Contains(buf.String(), "could not read Redis persistence") || !strings.Contains(buf.String(), "BUSY") {
		t.Errorf("log %q, want a warning with the BUSY reply", buf.String())
	}
}
