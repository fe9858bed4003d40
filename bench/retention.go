package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/internal/cpustat"
	"github.com/geoidem/geoidem/internal/redisserver"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// Section 10: retention at scale (issue 37). Each store is filled to
// o.retentionKeys keys, written straight in the store's own format (a COPY
// into pgstore's table, pipelined SETs of redisstore's values), as a day of
// deliveries leaves them: completed records whose retention ends anywhere
// in the next 24 hours. Then, at that size and on an empty store side by
// side, in interleaved rounds: the latency of the store's own Claim (a new
// key, a replay of a filled key) and Complete, from Go, serially; the table
// and index size, or the server's memory, per key; and for PostgreSQL the
// cost of pruning, Prune's DELETEs and the VACUUM that reclaims what they
// leave, in CPU time of the backend that runs them, per 100,000 rows. The
// figures are projected to issue 37's 432 M keys (5,000 first calls/s
// kept 24 h).

const (
	// retentionRate and retentionDay are issue 37's load: 5,000 first calls
	// per second, each kept for 24 hours.
	retentionRate = 5000
	retentionDay  = 24 * time.Hour
	// retentionRounds interleaves the latency measurements of the full and
	// the empty store, so that both meet the same moments of a shared
	// machine.
	retentionRounds = 5
	// retentionLiveFrom is the earliest end of a live filled key's
	// retention, after the fill: later than the section's end, so that
	// every replay measured finds its key completed (in a day of deliveries
	// the retentions end evenly over the next 24 h, from now on).
	retentionLiveFrom = time.Hour
)

// retentionKeysAtRate is the number of keys a store holds at issue 37's
// load: 432 M.
const retentionKeysAtRate = retentionRate * int64(retentionDay/time.Second)

// retentionRecord is every filled key's record: what section 1's bare
// handler answers, as the middleware records it.
var retentionRecord = keystore.Record{
	StatusCode: http.StatusCreated,
	Header:     http.Header{"Content-Type": {"application/json"}},
	Body:       ingestBody([]byte(feature)),
}

// retentionKey is the i-th filled key of a run: 64 hexadecimal digits, as
// the middleware's store keys are (middleware.StoreKey), spread over the
// key space.
func retentionKey(run string, i int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	sum := sha256.Sum256(append([]byte(run), b[:]...))
	return hex.EncodeToString(sum[:])
}

// latencies are the Claim and Complete latencies of one store at one size
// and, where cpu is set, the CPU time the server spent on each kind of call.
type latencies struct {
	claimNew, complete, replay []time.Duration

	// cpu, if set, reads the CPU time the server has used so far for this
	// store's calls (a PostgreSQL backend's, from /proc).
	cpu                              func() (time.Duration, bool)
	cpuClaim, cpuComplete, cpuReplay time.Duration
	cpuMissed                        bool // a reading failed
}

func (l *latencies) sort() {
	for _, v := range [][]time.Duration{l.claimNew, l.complete, l.replay} {
		slices.Sort(v)
	}
}

// tick adds the server's CPU time since the last reading *last to *to.
// The readings are taken between calls, outside the timed spans.
func (l *latencies) tick(last *time.Duration, to *time.Duration) {
	if l.cpu == nil {
		return
	}
	c, ok := l.cpu()
	if !ok {
		l.cpuMissed = true
		return
	}
	if to != nil {
		*to += c - *last
	}
	*last = c
}

// measureLatency times, serially, n Claims of new keys each followed by its
// Complete, and n Claims of keys the fill wrote (replays), on s; pick(i)
// returns the i-th filled key to replay, which must come back completed
// with retentionRecord.
func measureLatency(ctx context.Context, s keystore.Store, run string, n int, pick func(int) string, l *latencies) error {
	rec := keystore.AppendRecord(nil, retentionRecord)
	var last time.Duration
	l.tick(&last, nil)
	for range n {
		key := retentionKey(run+"new", len(l.claimNew))
		args := keystore.ClaimArgs{Fingerprint: sha256.Sum256([]byte(key)), Lease: 30 * time.Second, Token: keystore.NewToken()}
		t0 := time.Now()
		c, err := s.Claim(ctx, key, args)
		l.claimNew = append(l.claimNew, time.Since(t0))
		if err != nil || !c.Acquired {
			return fmt.Errorf("claim of a new key: acquired %v, %v", c.Acquired, err)
		}
		l.tick(&last, &l.cpuClaim)
		t0 = time.Now()
		err = s.Complete(ctx, key, args.Token, rec, retentionDay)
		l.complete = append(l.complete, time.Since(t0))
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		l.tick(&last, &l.cpuComplete)

		key = pick(len(l.replay))
		t0 = time.Now()
		c, err = s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: sha256.Sum256([]byte(key)), Lease: 30 * time.Second, Token: keystore.NewToken()})
		l.replay = append(l.replay, time.Since(t0))
		if err != nil || c.State != keystore.Completed || c.Record.StatusCode != retentionRecord.StatusCode || string(c.Record.Body) != string(retentionRecord.Body) {
			return fmt.Errorf("replay of a filled key: state %v, record %d %q, %v (the fill does not write the store's format)", c.State, c.Record.StatusCode, c.Record.Body, err)
		}
		l.tick(&last, &l.cpuReplay)
	}
	return nil
}

// latencyRows are the table rows of l at each size: the call, how many,
// p50, p99 and, where measured, the server's CPU per call.
func latencyRows(name string, sizes []string, ls []*latencies) [][]string {
	var rows [][]string
	for i, l := range ls {
		l.sort()
		for _, c := range []struct {
			what string
			v    []time.Duration
			cpu  time.Duration
		}{{"Claim, new key", l.claimNew, l.cpuClaim}, {"Complete", l.complete, l.cpuComplete}, {"Claim, replay", l.replay, l.cpuReplay}} {
			row := []string{name + ", " + sizes[i], c.what, commas(int64(len(c.v))), fmtDur(pct(c.v, 50)), fmtDur(pct(c.v, 99))}
			if l.cpu != nil {
				cpu := "–"
				if !l.cpuMissed && len(c.v) > 0 {
					cpu = fmtDur(c.cpu / time.Duration(len(c.v)))
				}
				row = append(row, cpu)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func runRetention(ctx context.Context, s *section) error {
	o := s.o
	s.line("Each store filled to **%s keys** (issue 37 asks for 10 M; `-retention-keys` sets it), written straight in the store's own format, "+
		"as a day of deliveries leaves them: completed records (201, a Content-Type, a %d-byte body) whose retention ends anywhere between 1 h and 24 h from now, "+
		"keys of 64 hexadecimal digits like the middleware's. The fill is not measured; the store at that size is. "+
		"Latencies are the store's own Claim and Complete, called from Go one at a time, at that size and on an empty store of the same kind, "+
		"in %d interleaved rounds so that both meet the same load of a shared machine. "+
		"Issue 37's load: %s first calls/s kept 24 h, so **%s keys** held at any time.",
		commas(int64(o.retentionKeys)), len(retentionRecord.Body), retentionRounds, commas(retentionRate), commas(retentionKeysAtRate))
	s.line("")
	var errs []error
	if err := retentionPostgres(ctx, s); err != nil {
		errs = append(errs, fmt.Errorf("postgres: %w", err))
	}
	for _, program := range []string{"redis-server", "valkey-server"} {
		if err := retentionRedis(ctx, s, program); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", program, err))
		}
	}
	return errors.Join(errs...)
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pgTable is one pgstore table of the section.
type pgTable struct {
	name  string // unquoted
	store *pgstore.Store
}

func (t pgTable) quoted() string { return pgx.Identifier{t.name}.Sanitize() }

func retentionPostgres(ctx context.Context, s *section) (err error) {
	o := s.o
	cfg, err := pgxpool.ParseConfig(o.postgresURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("at %s: %w", o.postgresURL, err)
	}
	defer pool.Close()
	// One connection for the pruning and the vacuum, whose backend's CPU
	// time is theirs alone, whatever else the server runs.
	cfg1 := cfg.Copy()
	cfg1.MaxConns, cfg1.MinConns = 1, 1
	one, err := pgxpool.NewWithConfig(ctx, cfg1)
	if err != nil {
		return err
	}
	defer one.Close()

	id := randomHex(6)
	var version string
	if err := pool.QueryRow(ctx, `SELECT split_part(current_setting('server_version'), ' ', 1)`).Scan(&version); err != nil {
		return err
	}
	full, empty := pgTable{name: "geoidem_bench_ret_" + id}, pgTable{name: "geoidem_bench_ret0_" + id}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, t := range []pgTable{full, empty} {
			if t.store != nil {
				t.store.Close()
			}
			for _, n := range []string{t.name, t.name + "_migrations"} {
				if _, derr := pool.Exec(dctx, "DROP TABLE IF EXISTS "+pgx.Identifier{n}.Sanitize()); derr != nil {
					err = errors.Join(err, derr)
				}
			}
		}
	}()
	for _, t := range []*pgTable{&full, &empty} {
		if t.store, err = pgstore.New(ctx, pool, pgstore.Config{Table: t.name, PruneInterval: -1}); err != nil {
			return err
		}
		// Vacuum runs when the section says so, and is measured then.
		if _, err := pool.Exec(ctx, `ALTER TABLE `+t.quoted()+` SET (autovacuum_enabled = false)`); err != nil {
			return err
		}
	}

	// The fill: the expired rows first (their retention ended two hours
	// ago), then the live ones, their expiries rising over the next 24 h,
	// in the order a day of deliveries inserts them.
	keys, expired := o.retentionKeys, o.retentionExpired
	o.logf("retention: filling %s with %s rows", full.name, commas(int64(keys)))
	t0 := time.Now()
	if err := pgFill(ctx, pool, full, id, 0, keys, expired); err != nil {
		return err
	}
	fillTime := time.Since(t0)
	t0 = time.Now()
	if _, err := one.Exec(ctx, `VACUUM (ANALYZE) `+full.quoted()); err != nil {
		return err
	}
	o.logf("retention: filled in %v, vacuumed in %v", fillTime.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))

	sizeRow := func(t pgTable, rows int) ([]string, int64, int64, error) {
		var heap, pk, exp, total int64
		err := pool.QueryRow(ctx, `SELECT pg_table_size($1::regclass), pg_relation_size($2::regclass), pg_relation_size($3::regclass), pg_total_relation_size($1::regclass)`,
			t.quoted(), pgx.Identifier{t.name + "_pkey"}.Sanitize(), pgx.Identifier{t.name + "_expires_at_idx"}.Sanitize()).Scan(&heap, &pk, &exp, &total)
		if err != nil {
			return nil, 0, 0, err
		}
		per := func(b int64) string { return fmt.Sprintf("%.0f B", float64(b)/float64(rows)) }
		return []string{"pgstore (PostgreSQL " + version + ")", commas(int64(rows)), mib(total), per(heap), per(pk), per(exp), per(total),
			gib(float64(total) / float64(rows) * float64(retentionKeysAtRate))}, total, pk + exp, nil
	}
	size, total, indexes, err := sizeRow(full, keys)
	if err != nil {
		return err
	}

	// Latency: the full table against the empty one (which holds only the
	// keys the measurement adds), interleaved, each store on a connection
	// of its own whose backend's CPU time is read between the calls.
	n := max(1, o.retentionCalls/retentionRounds)
	lf, le := &latencies{}, &latencies{}
	var latStores [2]*pgstore.Store
	for i, t := range []pgTable{full, empty} {
		p, err := pgxpool.NewWithConfig(ctx, cfg1.Copy())
		if err != nil {
			return err
		}
		defer p.Close()
		var pid int32
		if err := p.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return err
		}
		[]*latencies{lf, le}[i].cpu = backendCPU(pid)
		if latStores[i], err = pgstore.New(ctx, p, pgstore.Config{Table: t.name, PruneInterval: -1, SkipMigrate: true}); err != nil {
			return err
		}
		defer latStores[i].Close()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pickLive := func(t string, size int) func(int) string {
		return func(int) string { return retentionKey(t, expired+rng.IntN(max(1, size-expired))) }
	}
	for range retentionRounds {
		if err := measureLatency(ctx, latStores[0], id+"f", n, pickLive(id, keys), lf); err != nil {
			return err
		}
		// The empty table's live keys are the ones it got from the
		// measurement itself.
		if err := measureLatency(ctx, latStores[1], id+"e", n, func(i int) string { return retentionKey(id+"enew", i) }, le); err != nil {
			return err
		}
	}

	// The small table the earlier figure came from: only the rows to prune
	// (and the few the latency measurement left).
	if err := pgFill(ctx, pool, empty, id+"small", 0, expired, expired); err != nil {
		return err
	}
	if _, err := one.Exec(ctx, `VACUUM (ANALYZE) `+empty.quoted()); err != nil {
		return err
	}

	// Pruning: the store's own Prune (batches of DefaultPruneBatch), then
	// the VACUUM that reclaims the dead rows, each on the one connection,
	// whose backend's CPU time is read from /proc.
	type pruneCost struct {
		rows       int
		prune, vac time.Duration // wall
		pruneCPU   time.Duration
		vacCPU     time.Duration
		cpuKnown   bool
		// pruneWAL, vacWAL: the WAL the server wrote meanwhile, all
		// sessions together.
		pruneWAL, vacWAL int64
	}
	var pid int32
	if err := one.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	cpu := backendCPU(pid)
	walPos := func() (int64, error) {
		var b int64
		err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint`).Scan(&b)
		return b, err
	}
	measurePrune := func(t pgTable) (pruneCost, error) {
		st, err := pgstore.New(ctx, one, pgstore.Config{Table: t.name, PruneInterval: -1, SkipMigrate: true})
		if err != nil {
			return pruneCost{}, err
		}
		defer st.Close()
		var pc pruneCost
		var w [3]int64
		if w[0], err = walPos(); err != nil {
			return pc, err
		}
		c0, ok0 := cpu()
		t0 := time.Now()
		if pc.rows, err = st.Prune(ctx); err != nil {
			return pc, err
		}
		pc.prune = time.Since(t0)
		c1, ok1 := cpu()
		if w[1], err = walPos(); err != nil {
			return pc, err
		}
		t0 = time.Now()
		if _, err := one.Exec(ctx, `VACUUM `+t.quoted()); err != nil {
			return pc, err
		}
		pc.vac = time.Since(t0)
		c2, ok2 := cpu()
		if w[2], err = walPos(); err != nil {
			return pc, err
		}
		pc.pruneWAL, pc.vacWAL = w[1]-w[0], w[2]-w[1]
		pc.pruneCPU, pc.vacCPU, pc.cpuKnown = c1-c0, c2-c1, ok0 && ok1 && ok2
		if pc.rows != expired {
			return pc, fmt.Errorf("pruning %s deleted %d rows, want the %d expired", t.name, pc.rows, expired)
		}
		return pc, nil
	}
	o.logf("retention: pruning %s expired rows of %s", commas(int64(expired)), commas(int64(keys)))
	pSmall, err := measurePrune(empty)
	if err != nil {
		return err
	}
	pFull, err := measurePrune(full)
	if err != nil {
		return err
	}

	s.line("### PostgreSQL: size, latency and pruning")
	s.line("")
	s.line("Filled by COPY into pgstore's own table (migrations applied: primary key on `key`, index on `expires_at`), %s rows in %s, then `VACUUM (ANALYZE)` as autovacuum would have left it. "+
		"Autovacuum is off on the bench's two tables (`autovacuum_enabled = false`), so that the vacuum below is the one that reclaims the pruned rows, and is measured.",
		commas(int64(keys)), fmtDur(fillTime))
	s.line("")
	s.table([]string{"store", "keys", "total size", "heap/key", "primary key/key", "expiry index/key", "total/key", fmt.Sprintf("projected at %s keys", commas(retentionKeysAtRate))}, [][]string{size})
	s.table([]string{"store and size", "call", "calls", "p50", "p99", "backend CPU/call"},
		latencyRows("pgstore", []string{commas(int64(keys)) + " keys", "empty"}, []*latencies{lf, le}))

	per100k := func(d time.Duration, rows int) string {
		if rows == 0 {
			return "–"
		}
		return fmtDur(time.Duration(float64(d) * 100_000 / float64(rows)))
	}
	share := func(pc pruneCost) float64 {
		perRow := float64(pc.pruneCPU+pc.vacCPU) / float64(pc.rows)
		return perRow * retentionRate / float64(time.Second) * 100
	}
	pruneRow := func(what string, pc pruneCost) []string {
		cpuText := func(d time.Duration) string {
			if !pc.cpuKnown {
				return "–"
			}
			return per100k(d, pc.rows)
		}
		shareText := "–"
		if pc.cpuKnown {
			shareText = fmt.Sprintf("%.1f %%", share(pc))
		}
		walText := func(b int64) string {
			return fmt.Sprintf("%.1f MiB", float64(b)*100_000/float64(max(1, pc.rows))/(1<<20))
		}
		return []string{what, commas(int64(pc.rows)), per100k(pc.prune, pc.rows), cpuText(pc.pruneCPU), walText(pc.pruneWAL),
			per100k(pc.vac, pc.rows), cpuText(pc.vacCPU), walText(pc.vacWAL), shareText}
	}
	s.table([]string{"table", "rows pruned", "Prune, wall/100k", "Prune, CPU/100k", "Prune, WAL/100k", "VACUUM, wall/100k", "VACUUM, CPU/100k", "VACUUM, WAL/100k",
		fmt.Sprintf("CPU at %s keys/s (%% of a core)", commas(retentionRate))},
		[][]string{
			pruneRow(fmt.Sprintf("%s rows, all expired (a small table)", commas(int64(expired))), pSmall),
			pruneRow(fmt.Sprintf("%s rows, %s expired", commas(int64(keys)), commas(int64(expired))), pFull),
		})
	s.line("CPU is the backend's own (user and system, from /proc), for Prune's DELETE statements and for the `VACUUM` that follows them on the same connection; "+
		"the WAL writer's and checkpointer's share of writing the deletions is not in it. WAL is what the server wrote meanwhile (pg_current_wal_insert_lsn), "+
		"all sessions together: an upper bound on a server shared with other work. The last column is that CPU per row times %s rows/s: "+
		"what pruning by DELETE costs the server at issue 37's rate. A VACUUM scans every index whole, so its cost per pruned row falls as more rows are pruned per VACUUM: "+
		"here %.0f %% of the table was; autovacuum's default trigger (autovacuum_vacuum_scale_factor 0.2) waits for 20 %%, so this figure overstates the VACUUM share for a table at its default settings.",
		commas(retentionRate), 100*float64(expired)/float64(keys))
	s.line("")
	if pFull.cpuKnown && !lf.cpuMissed && len(lf.claimNew) > 0 {
		first := (lf.cpuClaim + lf.cpuComplete) / time.Duration(len(lf.claimNew))
		firstShare := float64(first) * retentionRate / float64(time.Second) * 100
		s.line("For scale: the first calls themselves, a Claim and a Complete each, cost the backend %s of CPU per key at %s keys (table above): "+
			"%.0f %% of a core at %s keys/s. Pruning by DELETE and VACUUM adds %.1f %% of a core to that, %.1f %% of the store's own work on its keys.",
			fmtDur(first), commas(int64(keys)), firstShare, commas(retentionRate), share(pFull), 100*share(pFull)/firstShare)
		s.line("")
	}
	s.line("Not measured here: a table larger than the machine's memory (at %s keys the two indexes alone, %.0f B per key here, come to %s, and every VACUUM reads them whole), "+
		"and the dead row version that each Complete leaves (it updates an indexed column, `expires_at`), which VACUUM reclaims too, pruned or not. "+
		"Issue 37's rule is to partition the key table by time if pruning by DELETE costs more than a few percent of a core at %s keys/s: "+
		"pgstore's documentation (\"Retention\") gives the decision taken on these figures.",
		commas(retentionKeysAtRate), float64(indexes)/float64(keys), gib(float64(indexes)/float64(keys)*float64(retentionKeysAtRate)), commas(retentionRate))
	s.line("")
	s.headline(fmt.Sprintf("pgstore at %s keys: bytes per key (table and indexes)", commas(int64(keys))), "%.0f B; %s at %s keys", float64(total)/float64(keys), gib(float64(total)/float64(keys)*float64(retentionKeysAtRate)), commas(retentionKeysAtRate))
	s.headline(fmt.Sprintf("pgstore at %s keys: Claim p50/p99, new key (empty store)", commas(int64(keys))), "%s / %s (%s / %s)", fmtDur(pct(lf.claimNew, 50)), fmtDur(pct(lf.claimNew, 99)), fmtDur(pct(le.claimNew, 50)), fmtDur(pct(le.claimNew, 99)))
	if pFull.cpuKnown {
		s.headline(fmt.Sprintf("pgstore pruning by DELETE + VACUUM at %s keys/s", commas(retentionRate)), "%.1f %% of a core (%s CPU per 100k rows, on %s rows)",
			share(pFull), per100k(pFull.pruneCPU+pFull.vacCPU, pFull.rows), commas(int64(keys)))
	}
	return nil
}

// backendCPU returns a function that reads the CPU time, user and system,
// that the PostgreSQL backend pid has used so far, from /proc.
func backendCPU(pid int32) func() (time.Duration, bool) {
	return func() (time.Duration, bool) {
		c, ok := cpustat.Pids([]int{int(pid)})[int(pid)]
		return c, ok
	}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
func gib(b float64) string {
	return fmt.Sprintf("%.0f GiB", b/(1<<30))
}

// pgFill COPYs rows from..to-1 of run into t: the first expired of them
// expired two hours ago, the others expire evenly over the next 24 h, in
// that order (see retentionLiveFrom).
func pgFill(ctx context.Context, pool *pgxpool.Pool, t pgTable, run string, from, to, expired int) error {
	_, header, body, err := keystore.SplitRecord(keystore.AppendRecord(nil, retentionRecord))
	if err != nil {
		return err
	}
	now := time.Now()
	live := max(1, to-expired)
	i := from
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= to {
			return nil, nil
		}
		key := retentionKey(run, i)
		fp := sha256.Sum256([]byte(key))
		var exp time.Time
		if i < expired {
			exp = now.Add(-2*time.Hour + time.Duration(i)*time.Microsecond)
		} else {
			exp = now.Add(retentionLiveFrom + time.Duration(float64(retentionDay-retentionLiveFrom)*float64(i-expired)/float64(live)))
		}
		i++
		return []any{key, fp[:], int64(keystore.NewToken()), exp, false, int32(retentionRecord.StatusCode), header, body, false}, nil
	})
	_, err = pool.CopyFrom(ctx, pgx.Identifier{t.name},
		[]string{"key", "fingerprint", "token", "expires_at", "took_over", "status", "header", "body", "released"}, src)
	return err
}

// retentionRedis fills a private server of program (redis-server or
// valkey-server, without persistence) and measures its memory per key and
// the store's latency there, against a second, empty private server.
func retentionRedis(ctx context.Context, s *section, program string) error {
	o := s.o
	var servers [2]*redisserver.Server
	var clients [2]*redis.Client
	for i := range servers {
		srv, err := redisserver.Start(ctx, redisserver.Options{Program: program})
		if err != nil {
			return err
		}
		defer srv.Stop()
		servers[i] = srv
		clients[i] = redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		defer clients[i].Close()
	}
	full := clients[0]
	name, err := redisVersion(ctx, full)
	if err != nil {
		return err
	}
	var stores [2]*redisstore.Store
	for i, c := range clients {
		if stores[i], err = redisstore.New(c, redisstore.Config{Durability: redisstore.AcceptVolatile}); err != nil {
			return err
		}
	}
	before, err := usedMemory(ctx, full)
	if err != nil {
		return err
	}
	keys := o.retentionKeys
	id := randomHex(6)
	o.logf("retention: filling %s with %s keys", name, commas(int64(keys)))
	t0 := time.Now()
	valueLen, err := redisFill(ctx, full, stores[0], id, keys)
	if err != nil {
		return err
	}
	fillTime := time.Since(t0)
	after, err := usedMemory(ctx, full)
	if err != nil {
		return err
	}
	n, err := full.DBSize(ctx).Result()
	if err != nil {
		return err
	}
	if n != int64(keys) {
		return fmt.Errorf("%s holds %d keys after the fill, want %d", name, n, keys)
	}
	per := float64(after-before) / float64(keys)

	calls := max(1, o.retentionCalls/retentionRounds)
	lf, le := &latencies{}, &latencies{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range retentionRounds {
		if err := measureLatency(ctx, stores[0], id+"f", calls, func(int) string { return retentionKey(id, rng.IntN(keys)) }, lf); err != nil {
			return err
		}
		if err := measureLatency(ctx, stores[1], id+"e", calls, func(i int) string { return retentionKey(id+"enew", i) }, le); err != nil {
			return err
		}
	}

	s.line("### %s: memory and latency", name)
	s.line("")
	s.line("A private `%s` (no persistence, no maxmemory), filled by pipelined SETs of redisstore's completed values (`'d'`, fingerprint, token, record: %d bytes) "+
		"under its keys (`geoidem:{key}`, 72 bytes), each with its retention as a PX expiry: %s keys in %s. "+
		"Memory is `used_memory` after the fill less before it. Expiry costs Redis no statement: a key is deleted when it is read after its expiry or when the server's "+
		"active expiry cycle samples it; until then it keeps its memory.",
		program, valueLen, commas(int64(keys)), fmtDur(fillTime))
	s.line("")
	s.table([]string{"server", "keys", "used_memory growth", "per key", fmt.Sprintf("projected at %s keys", commas(retentionKeysAtRate))},
		[][]string{{name, commas(int64(keys)), mib(after - before), fmt.Sprintf("%.0f B", per), gib(per * float64(retentionKeysAtRate))}})
	s.table([]string{"store and size", "call", "calls", "p50", "p99"},
		latencyRows("redisstore on "+name, []string{commas(int64(keys)) + " keys", "empty"}, []*latencies{lf, le}))
	s.headline(fmt.Sprintf("redisstore on %s at %s keys: used_memory per key", name, commas(int64(keys))), "%.0f B; %s at %s keys", per, gib(per*float64(retentionKeysAtRate)), commas(retentionKeysAtRate))
	return nil
}

// redisVersion names the server: "Redis 7.0.15" or "Valkey 8.0.1".
func redisVersion(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	f := infoFields(info)
	if f["server_name"] == "valkey" {
		return "Valkey " + f["valkey_version"], nil
	}
	return "Redis " + f["redis_version"], nil
}

func infoFields(info string) map[string]string {
	f := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	return f
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(infoFields(info)["used_memory"], 10, 64)
}

// redisFill SETs keys completed values in redisstore's format under st's
// Redis keys, in pipelines, their retention ending evenly over the next
// 24 h; it returns the length of a value.
func redisFill(ctx context.Context, c *redis.Client, st *redisstore.Store, run string, keys int) (int, error) {
	rec := keystore.AppendRecord(nil, retentionRecord)
	const batch = 1000
	value := make([]byte, 0, 41+len(rec))
	for i := 0; i < keys; i += batch {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < min(i+batch, keys); j++ {
				key := retentionKey(run, j)
				fp := sha256.Sum256([]byte(key))
				// redisstore's completed entry: 'd' | fingerprint |
				// token (8 bytes, big endian) | record.
				value = append(append(append(value[:0], 'd'), fp[:]...), make([]byte, 8)...)
				binary.BigEndian.PutUint64(value[33:41], uint64(keystore.NewToken()))
				value = append(value, rec...)
				ttl := retentionLiveFrom + time.Duration(float64(retentionDay-retentionLiveFrom)*float64(j)/float64(keys))
				p.Set(ctx, st.RedisKey(key), string(value), ttl)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return 41 + len(rec), nil
}
