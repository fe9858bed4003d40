package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

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
			if derr := pgstore.Drop(dctx, pool, pgstore.Config{Table: t.name}); derr != nil {
				err = errors.Join(err, derr)
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
		"what pruning by DELETE costs the server at that rate. A VACUUM scans every index whole, so its cost per pruned row falls as more rows are pruned per VACUUM: "+
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
		"The rule is to partition the key table by time if pruning by DELETE costs more than a few percent of a core at %s keys/s: "+
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
		c, ok := testkit.PidsCPU([]int{int(pid)})[int(pid)]
		return c, ok
	}
}

// pgFill COPYs rows from..to-1 of run into t: the first expired of them
// expired two hours ago, the others expire evenly over the next 24 h, in
// that order (see retentionLiveFrom).
func pgFill(ctx context.Context, pool *pgxpool.Pool, t pgTable, run string, from, to, expired int) error {
	_, header, body, err := record.Split(record.Append(nil, retentionRecord))
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
