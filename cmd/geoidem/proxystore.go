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

// openProxyStore opens the key store c.store names, as examples/ingest
// opens its key store: memory, redis://… (a comma-separated host list for
// a Cluster) or postgres://…, failing on a store that cannot be used. The
// bounds on each client's new keys apply without webhook keys only.
func openProxyStore(ctx context.Context, c *proxyConfig, signed bool, log *slog.Logger) (keystore.Store, func(), error) {
	clientKeys := c.clientKeys
	if clientKeys < 0 || signed {
		clientKeys = 0
	}
	switch s := c.store; {
	case s == "" || s == "memory":
		mc := memstore.Config{MaxEntries: c.maxKeys, ClientRate: c.clientRate, ClientBurst: c.clientBurst}
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
		store, err := redisstore.New(client, redisstore.Config{KeyPrefix: c.redisPrefix, Durability: durability, Logger: log,
			ClientKeys: clientKeys, ClientWindow: c.clientWindow})
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
		store, err := pgstore.New(ictx, pool, pgstore.Config{Table: c.pgTable, ClientKeys: clientKeys, ClientWindow: c.clientWindow})
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return store, func() { store.Close(); pool.Close() }, nil
	}
	return nil, nil, fmt.Errorf("-store %q: want memory, redis://… or postgres://…", redacted(c.store))
}
