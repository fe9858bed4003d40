package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Durability says what New requires of the Redis server's persistence: what
// the server keeps of the store's keys when it restarts (a crash, a kill, a
// redeploy, an out-of-memory kill). A record that a restart loses makes the
// next retry of its request run the handler again; a claim that a restart
// loses lets a retry run while the first request still runs.
//
// What each server configuration loses on a restart, as New judges it:
//
//   - appendonly yes, appendfsync always: nothing. Redis writes and fsyncs
//     the AOF before it replies.
//   - appendonly yes, appendfsync everysec (Redis's default fsync): nothing
//     expected when only the redis-server process dies, since Redis writes
//     the AOF before it replies and the kernel keeps what was written (the
//     tests measure 0; Redis may postpone that write by up to two seconds
//     while a slow fsync runs); a host crash or power loss loses about the
//     last second of writes (up to two when the disk stalls an fsync).
//     Accepted: those keys run again.
//   - appendonly yes, appendfsync no: nothing when only the process dies; a
//     host crash loses what the kernel had not yet written back (typically
//     up to 30 s). New logs a warning.
//   - appendonly no with RDB save points (Redis's built-in default when it
//     runs without a configuration file): every write since the last
//     snapshot, which is minutes (or, with few writes, up to the longest save
//     interval), unless Redis was shut down cleanly. New logs a warning.
//   - appendonly no and no save points (save ""): everything. New refuses
//     it unless the caller accepts it (AcceptVolatile).
//
// New reads this with CONFIG GET appendonly, appendfsync and save, and where
// CONFIG is not allowed (renamed, forbidden by an ACL, as managed services
// do) with INFO persistence, which tells whether AOF is on but neither the
// fsync policy nor the save points. Then AOF on is accepted as AOF (assumed
// everysec), and AOF off is refused like a volatile server, because nothing
// shows that the server keeps anything: enable AOF, allow CONFIG GET, or
// accept it. With a Cluster (or Ring) client New reads every node, masters
// and replicas, and judges by the weakest; with a Sentinel (failover)
// client it reads the master it reaches, so give the replicas the same
// persistence.
type Durability int

const (
	// RefuseVolatile (the default) makes New fail with an error wrapping
	// ErrNotDurable when a server keeps nothing across a restart (no AOF and
	// no save points), when it refuses both CONFIG GET and INFO (an unknown,
	// renamed command or an ACL's NOPERM), or when INFO shows AOF off and
	// CONFIG cannot show the save points. It logs a warning through
	// Config.Logger for RDB snapshots without AOF, for appendfsync no, and
	// when the persistence cannot be read for a passing reason (Redis
	// unreachable at New, a timeout, a BUSY or LOADING reply): the store
	// works once Redis answers, unchecked. AOF with appendfsync always or
	// everysec passes silently.
	RefuseVolatile Durability = iota

	// AcceptVolatile says the caller accepts a Redis that keeps nothing
	// across a restart. What is lost then, at every restart: every
	// completed record and every claim in flight. Every retry that arrives
	// after the restart runs its handler again (the record it would have
	// replayed is gone), and a retry of a request still running when Redis
	// restarted runs alongside it (its claim is gone; fencing refuses the
	// first request's late Complete, but cannot undo its effect). Use it for
	// tests, caches of work that is idempotent anyway, or servers whose
	// restart you prevent otherwise. New sends nothing to Redis for this
	// check.
	AcceptVolatile

	// RequireAOF makes New fail with an error wrapping ErrNotDurable unless
	// every node reports appendonly yes with appendfsync always or everysec
	// (or an fsync policy that INFO persistence cannot tell), including when
	// the persistence cannot be read at all (Redis unreachable at New).
	RequireAOF
)

// ErrNotDurable reports, from New, a Redis server whose persistence would
// lose the store's records on a restart more than Config.Durability accepts,
// or whose persistence could not be read when Config.Durability asks for
// proof.
var ErrNotDurable = errors.New("redisstore: Redis would lose records on a restart")

// durabilityCheckTimeout bounds the check New makes of the server's
// persistence, on top of the client's own timeouts.
const durabilityCheckTimeout = 2 * time.Second

// loss orders what a node's persistence loses on a restart, least first.
type loss int

const (
	lossNothing    loss = iota // AOF, appendfsync always
	lossSecond                 // AOF, everysec (or fsync unknown): host crash loses ~1 s
	lossUnwritten              // AOF, appendfsync no: host crash loses what the kernel held
	lossSnapshot               // RDB save points only: what came after the last snapshot
	lossMaybeAll               // AOF off, save points unknown (CONFIG not allowed)
	lossEverything             // no AOF, no save points
)

// persistence is what one node said about its persistence.
type persistence struct {
	addr      string // for Cluster and Ring nodes
	aof       bool
	fsync     string // appendfsync; "" when CONFIG was not allowed
	save      string // save points; meaningful when saveKnown
	saveKnown bool
}

func (p persistence) loss() loss {
	switch {
	case p.aof && p.fsync == "always":
		return lossNothing
	case p.aof && p.fsync == "no":
		return lossUnwritten
	case p.aof:
		return lossSecond
	case !p.saveKnown:
		return lossMaybeAll
	case p.save != "":
		return lossSnapshot
	}
	return lossEverything
}

func (p persistence) String() string {
	var b strings.Builder
	if p.addr != "" {
		b.WriteString(p.addr + ": ")
	}
	switch {
	case p.aof && p.fsync != "":
		b.WriteString("appendonly yes, appendfsync " + p.fsync)
	case p.aof:
		b.WriteString("appendonly yes (from INFO persistence; appendfsync unknown)")
	case p.saveKnown:
		b.WriteString("appendonly no, save " + strconv.Quote(p.save))
	default:
		b.WriteString("appendonly no (from INFO persistence; save points unknown)")
	}
	return b.String()
}

// checkDurability reads the server's persistence into s.persistence and acts
// on it as mode says.
func (s *Store) checkDurability(client redis.UniversalClient, mode Durability, log *slog.Logger) error {
	switch mode {
	case AcceptVolatile:
		return nil
	case RefuseVolatile, RequireAOF:
	default:
		return fmt.Errorf("redisstore: unknown Durability %d", mode)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), durabilityCheckTimeout)
	defer cancel()
	worst, known, refused, err := readAllPersistence(ctx, client)
	if known {
		s.persistence = worst.String()
	}
	l := worst.loss()
	const accept = "enable AOF (appendonly yes, appendfsync always or everysec), or set Config.Durability to AcceptVolatile to accept the loss"
	switch {
	case known && l == lossEverything:
		return fmt.Errorf("%w: %s keeps nothing: every completed record and every claim would be lost, and every retry after a restart would run its handler again; %s",
			ErrNotDurable, worst, accept)
	case known && l == lossMaybeAll:
		return fmt.Errorf("%w: %s: nothing shows that it keeps anything across a restart; %s, or allow CONFIG GET so that RDB save points can be read",
			ErrNotDurable, worst, accept)
	case known && mode == RequireAOF && l > lossSecond:
		return fmt.Errorf("%w: %s; RequireAOF wants appendonly yes with appendfsync always or everysec on every node", ErrNotDurable, worst)
	case err != nil && (refused || mode == RequireAOF):
		return fmt.Errorf("%w: its persistence cannot be read, so nothing shows that it keeps records across a restart; %s: %w",
			ErrNotDurable, accept, err)
	}
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "redisstore: could not read Redis persistence; a Redis without AOF or RDB snapshots loses every record and claim on a restart, and every retry after it runs its handler again",
			slog.Any("error", err))
	}
	switch {
	case known && l == lossSnapshot:
		log.LogAttrs(ctx, slog.LevelWarn, "redisstore: Redis persists only RDB snapshots: a crash or kill loses every record and claim written since the last snapshot, and their retries run their handlers again; set appendonly yes",
			slog.String("persistence", worst.String()))
	case known && l == lossUnwritten:
		log.LogAttrs(ctx, slog.LevelWarn, "redisstore: Redis AOF with appendfsync no: a host crash loses the records the kernel had not yet written (typically up to 30 s), and their retries run their handlers again; set appendfsync everysec or always",
			slog.String("persistence", worst.String()))
	}
	return nil
}

// readAllPersistence reads the persistence of every node of a Cluster or
// Ring client, or of the one server of any other client, and returns the
// weakest node's (known reports whether any node was read). err joins the
// failures; refused reports that a node answered but allowed neither CONFIG
// GET nor INFO persistence (a Redis error reply, not a network failure).
func readAllPersistence(ctx context.Context, client redis.UniversalClient) (worst persistence, known, refused bool, err error) {
	var (
		mu   sync.Mutex
		errs []error
	)
	add := func(p persistence, e error, node string) {
		mu.Lock()
		defer mu.Unlock()
		if e != nil {
			var rerr *refusedError
			refused = refused || errors.As(e, &rerr)
			if node != "" {
				e = fmt.Errorf("%s: %w", node, e)
			}
			errs = append(errs, e)
			return
		}
		p.addr = node
		if !known || p.loss() > worst.loss() {
			worst, known = p, true
		}
	}
	each := func(ctx context.Context, n *redis.Client) error {
		p, e := readPersistence(ctx, n)
		add(p, e, n.Options().Addr)
		return nil
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		if e := c.ForEachShard(ctx, each); e != nil {
			add(persistence{}, e, "")
		}
	case *redis.Ring:
		if e := c.ForEachShard(ctx, each); e != nil {
			add(persistence{}, e, "")
		}
	default:
		p, e := readPersistence(ctx, client)
		add(p, e, "")
	}
	return worst, known, refused, errors.Join(errs...)
}

// refusedError is a server's refusal of both CONFIG GET and INFO
// persistence: Redis error replies, as opposed to a network failure.
type refusedError struct{ err error }

// isRefusal reports whether err is a Redis reply that refuses the command
// for good: an unknown (renamed) command or an ACL's NOPERM. Other replies
// (LOADING, BUSY, MASTERDOWN, …) pass, like a network failure.
func isRefusal(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.HasPrefix(msg, "ERR unknown command")
}

func (e *refusedError) Error() string { return "refused: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// readPersistence asks one server for its persistence: CONFIG GET appendonly,
// appendfsync and save in one pipeline, or, where CONFIG is not allowed,
// INFO persistence.
func readPersistence(ctx context.Context, c redis.Cmdable) (persistence, error) {
	var aof, fsync, save *redis.MapStringStringCmd
	_, cerr := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		aof = p.ConfigGet(ctx, "appendonly")
		fsync = p.ConfigGet(ctx, "appendfsync")
		save = p.ConfigGet(ctx, "save")
		return nil
	})
	if cerr == nil {
		a, aok := aof.Val()["appendonly"]
		f, fok := fsync.Val()["appendfsync"]
		s, sok := save.Val()["save"]
		if aok && fok && sok {
			return persistence{aof: a == "yes", fsync: f, save: s, saveKnown: true}, nil
		}
		cerr = errors.New("CONFIG GET did not return appendonly, appendfsync and save")
	} else if rerr := redis.Error(nil); !errors.As(cerr, &rerr) {
		// No reply (Redis unreachable, a timeout): INFO would fail alike.
		return persistence{}, cerr
	}
	info, ierr := c.Info(ctx, "persistence").Result()
	if ierr != nil {
		err := errors.Join(cerr, ierr)
		if isRefusal(ierr) {
			err = &refusedError{err}
		}
		return persistence{}, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "aof_enabled:"); ok {
			return persistence{aof: strings.TrimSpace(v) == "1"}, nil
		}
	}
	return persistence{}, errors.Join(cerr, errors.New("INFO persistence has no aof_enabled"))
}
