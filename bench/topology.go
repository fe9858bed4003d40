package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Section 11: clustered stores (many receivers, one store).
// Two receivers, each with its own store client on one shared store, take
// deliveries from senders of package client that retry; once a third of
// the events are acknowledged the store's topology changes under the load:
// on a private Redis Cluster of three masters with a replica each
// (package rediscluster, AOF everysec) the slots of the keys around the
// delivery front are migrated to another master, a master is failed over
// by CLUSTER FAILOVER, or a master is SIGKILLed and its replica promoted,
// each with redisstore's WaitReplicas 0 and 1; on a private PostgreSQL 15
// primary with a streaming standby (package pgstandby), asynchronous or
// synchronous, the primary is stopped (immediate) and the standby
// promoted, the receivers' pools reconnecting through a URL that lists
// both with target_session_attrs=read-write. Once every delivery has
// ended, each acknowledged event is delivered once more: a handler run then
// means the event's record was lost.

// topoCase is one row of the section.
type topoCase struct {
	name    string
	store   string // "redis" or "pg"
	event   string // "migrate", "failover", "kill", "promote"
	wait    int    // redisstore's WaitReplicas
	sync    bool   // PostgreSQL: synchronous standby
	promise string // what the store's documentation promises for it
	exact   bool   // whether that promise is exactly once: no key run twice, no record lost
}

func topoCases() []topoCase {
	migrate := "Cluster: a claim meeting MOVED or ASK follows it within the call; a WaitReplicas claim that is redirected fails (503) and the retry finds the new owner. No loss is foreseen: exactly once."
	planned := "Failover: a claim or record is lost only when a master fails before its replica received it; a planned CLUSTER FAILOVER has the replica catch up first (Redis's manual failover), so none is foreseen: exactly once."
	return []topoCase{
		{name: "Redis Cluster: slots of live keys migrated", store: "redis", event: "migrate", wait: 0, promise: migrate, exact: true},
		{name: "Redis Cluster: slots of live keys migrated", store: "redis", event: "migrate", wait: 1, promise: migrate, exact: true},
		{name: "Redis Cluster: planned CLUSTER FAILOVER", store: "redis", event: "failover", wait: 0, promise: planned, exact: true},
		{name: "Redis Cluster: planned CLUSTER FAILOVER", store: "redis", event: "failover", wait: 1, promise: planned, exact: true},
		{name: "Redis Cluster: master SIGKILLed, replica promoted", store: "redis", event: "kill", wait: 0,
			promise: "Failover: replication is asynchronous; claims and records acknowledged but not yet replicated are lost, bounded by the replication lag. Duplicates allowed."},
		{name: "Redis Cluster: master SIGKILLed, replica promoted", store: "redis", event: "kill", wait: 1,
			promise: "Failover: WaitReplicas makes claims, extensions and records wait for a replica, which narrows the window without closing it. Duplicates allowed, fewer."},
		{name: "PostgreSQL: standby promoted, async replication", store: "pg", event: "promote",
			promise: "pgstore's documentation says nothing of standbys beyond Transient (a failover's errors are worth a retry). PostgreSQL: asynchronous replication may lose the last commits. Duplicates allowed."},
		{name: "PostgreSQL: standby promoted, synchronous standby (synchronous_commit on)", store: "pg", event: "promote", sync: true,
			promise: "pgstore: nothing beyond Transient. PostgreSQL: a commit acknowledged with a synchronous standby is on the standby's disk, and a key is acknowledged only after its Complete committed. Exactly once.", exact: true},
	}
}

// quietRedis discards go-redis's own log lines (a dial refused by the
// killed master, once per attempt).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func runTopology(ctx context.Context, s *section) error {
	o := s.o
	redis.SetLogger(quietRedis{})
	var seeds []uint64
	for i := range max(1, o.topoSeeds) {
		seeds = append(seeds, o.seed+uint64(i))
	}
	type row struct {
		c    topoCase
		seed uint64
		r    topoResult
	}
	var rows []row
	cases := topoCases()
	for _, seed := range seeds {
		var redisCases, pgCases []topoCase
		for _, c := range cases {
			if c.store == "redis" {
				redisCases = append(redisCases, c)
			} else {
				pgCases = append(pgCases, c)
			}
		}
		// One cluster for the Redis rows of a seed, in order: migrations and
		// planned failovers leave three masters with a replica each, and the
		// second kill finds a master that still has one.
		cl, err := testkit.StartCluster(ctx, testkit.ClusterOptions{AppendFsync: "everysec"})
		if err != nil {
			return err
		}
		for i, c := range redisCases {
			o.logf("clustered: %s, WaitReplicas %d, seed %d", c.name, c.wait, seed)
			r, err := runTopo(ctx, redisRun(o, cl, c, seed, fmt.Sprintf("topo%d-%d:", seed, i)))
			if err != nil {
				cl.Close()
				return fmt.Errorf("%s (WaitReplicas %d, seed %d): %w", c.name, c.wait, seed, err)
			}
			rows = append(rows, row{c, seed, r})
		}
		cl.Close()
		for _, c := range pgCases {
			o.logf("clustered: %s, seed %d", c.name, seed)
			r, err := pgRun(ctx, o, c, seed)
			if err != nil {
				return fmt.Errorf("%s (seed %d): %w", c.name, seed, err)
			}
			rows = append(rows, row{c, seed, r})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return slices.Index(cases, a.c) - slices.Index(cases, b.c) })

	s.line("Two receivers, each with its own store client on one shared store, behind a round-robin front (a retry usually meets the other receiver); %d senders of package client (backoff 20 ms to 500 ms, 30 attempts, 40 s deadline) deliver %d events, their first attempts spread evenly over %v; the handler counts its runs per key in this process. Once a third of the events are acknowledged, the store's topology changes under the load. The receivers run with a %v lease and a 500 ms store timeout. After the last delivery every acknowledged event is delivered once more: **lost** counts those whose handler ran again (the record was gone), **ran twice** the keys whose handler ran more than once during the deliveries. Redis: a private Cluster of three masters with a replica each (package rediscluster, appendonly yes, appendfsync everysec, cluster-node-timeout %v). PostgreSQL 15: a private primary with a streaming standby (package pgstandby); the receivers' pools use a URL listing both, with target_session_attrs=read-write. The receivers' go-redis ClusterStateReloadInterval: %s.", o.topoSenders, o.topoEvents, o.topoSpan, topoLease, testkit.NodeTimeout, reloadText(o.topoReload))
	s.line("")
	var table [][]string
	for _, r := range rows {
		wait := "—"
		if r.c.store == "redis" {
			wait = fmt.Sprint(r.c.wait)
		}
		table = append(table, []string{r.c.name, wait, fmt.Sprint(r.seed), fmt.Sprint(r.r.events), fmt.Sprint(r.r.acked),
			countsText(r.r.dead, r.r.deadBy), fmt.Sprint(r.r.twice), fmt.Sprint(r.r.lost), countsText(sum(r.r.lateFailed), r.r.lateFailed),
			fmt.Sprint(r.r.attempts), fmt.Sprintf("%.1f s", r.r.unavailable.Seconds()),
			fmt.Sprintf("%s (%.1f s)", r.r.event, r.r.eventTook.Seconds()), fmt.Sprintf("%.1f s", r.r.elapsed.Seconds())})
	}
	s.table([]string{"store and event", "WaitReplicas", "seed", "events", "acknowledged", "dead letters", "ran twice", "lost", "late retries failed",
		"attempts", "5xx until", "the event (its duration)", "run"}, table)
	s.line("*5xx until*: from the event's start to the last attempt answered 5xx or not at all (0: none after the event started). *late retries failed*: acknowledged events whose late retry did not succeed (their record's fate unknown).")
	s.line("")

	s.line("What the store's documentation promises for each row (keystore/redisstore and keystore/pgstore package docs), against the figures:")
	s.line("")
	var promises [][]string
	for _, c := range cases {
		twice, lost, dead := 0, 0, 0
		for _, r := range rows {
			if r.c == c {
				twice, lost, dead = twice+r.r.twice, lost+r.r.lost, dead+r.r.dead
			}
		}
		verdict := "agree"
		if c.exact && twice+lost > 0 {
			verdict = "**disagree**"
		}
		wait := ""
		if c.store == "redis" {
			wait = fmt.Sprintf(", WaitReplicas %d", c.wait)
		}
		promises = append(promises, []string{c.name + wait, c.promise, fmt.Sprintf("%d ran twice, %d lost, %d dead letters", twice, lost, dead), verdict})
		if c.exact && twice+lost > 0 {
			s.headline("clustered: "+c.name+wait, "%d ran twice, %d lost where the docs foresee none", twice, lost)
		}
	}
	s.table([]string{"row", "promise", "measured (both seeds)", "figures"}, promises)
	return nil
}

// redisRun is one Redis Cluster row: stores on cl under prefix, and its
// event.
func redisRun(o *options, cl *testkit.Cluster, c topoCase, seed uint64, prefix string) topoRun {
	slotOf := func(key string) int { return testkit.Slot(middleware.StoreKey(topoScope, key)) }
	return topoRun{
		seed: seed, events: o.topoEvents, senders: o.topoSenders, span: o.topoSpan,
		stores: func(ctx context.Context, n int) ([]keystore.Store, func(), error) {
			var clients []*redis.ClusterClient
			closeAll := func() {
				for _, c := range clients {
					c.Close()
				}
			}
			var stores []keystore.Store
			for range n {
				rc := cl.Client(redis.ClusterOptions{DialTimeout: 250 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
					WriteTimeout: 500 * time.Millisecond, ContextTimeoutEnabled: true, MaxRedirects: 8, PoolSize: 32,
					ClusterStateReloadInterval: o.topoReload})
				clients = append(clients, rc)
				st, err := redisstore.New(rc, redisstore.Config{KeyPrefix: prefix, WaitReplicas: c.wait, WaitTimeout: 250 * time.Millisecond,
					Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					closeAll()
					return nil, nil, err
				}
				stores = append(stores, st)
			}
			return stores, closeAll, nil
		},
		fire: func(ctx context.Context, keys []string, acked int) (string, error) {
			front := keys[min(acked, len(keys)-1)]
			switch c.event {
			case "migrate":
				masters, err := cl.Masters(ctx)
				if err != nil {
					return "", err
				}
				var slots []int
				// The slots of the keys just delivered (records), in
				// flight, and about to be claimed.
				for _, k := range keys[max(0, acked-o.topoEvents/20):min(len(keys), acked+o.topoEvents/4)] {
					if s := slotOf(k); !slices.Contains(slots, s) {
						slots = append(slots, s)
					}
				}
				moved, reclaims := 0, cl.Reclaims
				for _, s := range slots {
					from, err := cl.MasterOf(ctx, s)
					if err != nil {
						return "", err
					}
					to := masters[(slices.Index(masters, from)+1)%len(masters)]
					n, err := cl.MigrateSlot(ctx, s, to)
					if err != nil {
						return "", err
					}
					moved += n
				}
				desc := fmt.Sprintf("%d slots migrated, %d keys moved", len(slots), moved)
				if n := cl.Reclaims - reclaims; n > 0 {
					desc += fmt.Sprintf("; %d slot(s) went back to the old owner and were claimed again", n)
				}
				return desc, nil
			case "failover", "kill":
				master, err := cl.MasterOf(ctx, slotOf(front))
				if err != nil {
					return "", err
				}
				if _, err := cl.ReplicaOf(ctx, master); err != nil { // an earlier kill left it alone
					masters, err := cl.Masters(ctx)
					if err != nil {
						return "", err
					}
					for _, m := range masters {
						if _, err := cl.ReplicaOf(ctx, m); err == nil {
							master = m
						}
					}
				}
				if c.event == "failover" {
					_, err = cl.Failover(ctx, master, testkit.Planned)
					return "CLUSTER FAILOVER", err
				}
				t0 := time.Now()
				if _, err := cl.Kill(ctx, master); err != nil {
					return "", err
				}
				promoted := time.Since(t0)
				// A supervisor starts the killed node again: it rejoins as
				// the promoted replica's replica.
				return fmt.Sprintf("SIGKILL; replica promoted after %.1f s; killed node back as its replica", promoted.Seconds()), cl.Restart(ctx, master)
			}
			return "", fmt.Errorf("unknown event %q", c.event)
		},
	}
}

// pgRun is one PostgreSQL row: a fresh primary and standby, stores on
// pools over both, and the promotion.
func pgRun(ctx context.Context, o *options, c topoCase, seed uint64) (topoResult, error) {
	p, err := testkit.StartStandby(ctx, testkit.StandbyOptions{Sync: c.sync})
	if err != nil {
		return topoResult{}, err
	}
	defer p.Close()
	return runTopo(ctx, topoRun{
		seed: seed, events: o.topoEvents, senders: o.topoSenders, span: o.topoSpan,
		stores: func(ctx context.Context, n int) ([]keystore.Store, func(), error) {
			var pools []*pgxpool.Pool
			var pgs []*pgstore.Store
			closeAll := func() {
				for _, s := range pgs {
					s.Close()
				}
				for _, p := range pools {
					p.Close()
				}
			}
			var stores []keystore.Store
			for range n {
				cfg, err := pgxpool.ParseConfig(p.URL() + "&connect_timeout=2")
				if err != nil {
					closeAll()
					return nil, nil, err
				}
				cfg.MaxConns = 8
				pool, err := pgxpool.NewWithConfig(ctx, cfg)
				if err != nil {
					closeAll()
					return nil, nil, err
				}
				pools = append(pools, pool)
				st, err := pgstore.New(ctx, pool, pgstore.Config{})
				if err != nil {
					closeAll()
					return nil, nil, err
				}
				pgs = append(pgs, st)
				stores = append(stores, st)
			}
			return stores, closeAll, nil
		},
		fire: func(ctx context.Context, _ []string, _ int) (string, error) {
			mode := "async"
			if c.sync {
				mode = "sync"
			}
			return "primary stopped (immediate), " + mode + " standby promoted", p.Failover(ctx)
		},
	})
}

// countsText is n, followed by its breakdown when there is one.
func countsText(n int, by map[string]int) string {
	if n == 0 {
		return "0"
	}
	var parts []string
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	slices.Sort(parts)
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

func sum(by map[string]int) int {
	n := 0
	for _, v := range by {
		n += v
	}
	return n
}

func reloadText(d time.Duration) string {
	if d == 0 {
		return "go-redis's default (60 s in v9.23)"
	}
	return d.String()
}
