package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// defaultClientKeys is -client-keys on Redis and PostgreSQL when it is
// zero: each address's new keys an hour (their default window).
const defaultClientKeys = 50_000

// openProxyStore opens the key store c.store names, as examples/ingest
// opens its key store: memory, redis://… (a comma-separated host list for
// a Cluster) or postgres://…, failing on a store that cannot be used. The
// bounds on each client's new keys apply without webhook keys only.
func openProxyStore(ctx context.Context, c *proxyConfig, signed bool, log *slog.Logger) (keystore.Store, func(), error) {
	clientKeys := c.clientKeys // Redis's and PostgreSQL's: 0 is no bound
	switch {
	case clientKeys < 0 || signed:
		clientKeys = 0
	case clientKeys == 0:
		clientKeys = defaultClientKeys
	}
	switch s := c.store; {
	case s == "" || s == "memory":
		mc := memstore.Config{MaxEntries: c.maxKeys, ClientKeys: c.clientKeys, ClientWindow: c.clientWindow}
		if signed {
			mc.ClientKeys = -1 // memstore's 0 is its default bound
		}
		return memstore.New(mc), func() {}, nil
	case strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://"):
		u, err := url.Parse(s)
		if err != nil {
			return nil, nil, fmt.Errorf("-store: %w", err)
		}
		var client redis.UniversalClient
		if strings.Contains(u.Host, ",") {
			copts := &redis.ClusterOptions{Addrs: strings.Split(u.Host, ","), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, MaintNotificationsConfig: quiet}
			if u.User != nil {
				copts.Username = u.User.Username()
				copts.Password, _ = u.User.Password()
			}
			client = redis.NewClusterClient(copts)
		} else {
			ropts, err := redis.ParseURL(s)
			if err != nil {
				return nil, nil, fmt.Errorf("-store: %w", err)
			}
			ropts.DialTimeout, ropts.ReadTimeout, ropts.WriteTimeout = time.Second, time.Second, time.Second
			ropts.ContextTimeoutEnabled = true
			ropts.MaintNotificationsConfig = quiet
			client = redis.NewClient(ropts)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := client.Ping(pctx).Err(); err != nil {
			client.Close()
			return nil, nil, fmt.Errorf("store %s: Redis cannot be used: %w", redacted(s), err)
		}
		durability := redisstore.RefuseVolatile
		if c.redisVolatile {
			durability = redisstore.AcceptVolatile
		}
		maxMemory, err := redisMaxMemory(ctx, client, c.redisMaxMemory, log)
		if err != nil {
			client.Close()
			return nil, nil, err
		}
		store, err := redisstore.New(client, redisstore.Config{KeyPrefix: c.redisPrefix, Durability: durability, Logger: log,
			ClientKeys: clientKeys, ClientWindow: c.clientWindow, MaxMemory: maxMemory})
		if err != nil {
			client.Close()
			return nil, nil, err
		}
		return store, func() { client.Close() }, nil
	case strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://"):
		pool, err := pgxpool.New(ctx, s)
		if err != nil {
			return nil, nil, fmt.Errorf("-store: %w", err)
		}
		ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		store, err := pgstore.New(ictx, pool, pgstore.Config{Table: c.pgTable, ClientKeys: clientKeys, ClientWindow: c.clientWindow,
			MaxKeys: max(0, c.pgMaxKeys)})
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return store, func() { store.Close(); pool.Close() }, nil
	}
	return nil, nil, fmt.Errorf("-store %q: want memory, redis://… or postgres://…", redacted(c.store))
}

// defaultPGMaxKeys is -pg-max-keys's default, examples/ingest's: ten
// million rows, a few gigabytes of table and index with small recorded
// answers, well over what legitimate senders hold in a retention (115 new
// keys a second for 24 h) and far under what a flood of rotating
// addresses adds before the disk fills. PostgreSQL has no setting to draw
// it from, as Redis has maxmemory: size it to the disk.
const defaultPGMaxKeys = 10_000_000

// redisMaxMemory is redisstore.Config.MaxMemory for -redis-max-memory v,
// as examples/ingest sets it: v when positive, none when negative, and by
// default nine tenths of the server's maxmemory, or none, said in the
// log, when the server sets no maxmemory.
func redisMaxMemory(ctx context.Context, client redis.UniversalClient, v int64, log *slog.Logger) (int64, error) {
	switch {
	case v > 0:
		return v, nil
	case v < 0:
		return 0, nil
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bound, maxmemory, err := redisstore.SuggestedMaxMemory(ictx, client)
	if err != nil {
		return 0, fmt.Errorf("store: reading Redis's maxmemory: %w", err)
	}
	if bound == 0 {
		log.Warn("Redis sets no maxmemory: nothing bounds what all clients together store but the host's memory; set maxmemory on the server (new keys are then refused 503 store-full at nine tenths of it) or -redis-max-memory")
		return 0, nil
	}
	log.Info("new keys refused 503 store-full at nine tenths of Redis's maxmemory", "max_memory", bound, "maxmemory", maxmemory)
	return bound, nil
}
