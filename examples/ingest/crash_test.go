package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/examples/ingest/service"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore/pgstore"
)

// recordingTransport keeps every response body it carries, per key.
type recordingTransport struct {
	mu     sync.Mutex
	bodies map[string][]string // key -> bodies of its 2xx answers
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err // a connection killed mid-response: a network error for the sender
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if resp.StatusCode/100 == 2 {
		t.mu.Lock()
		t.bodies[req.Header.Get("Idempotency-Key")] = append(t.bodies[req.Header.Get("Idempotency-Key")], string(body))
		t.mu.Unlock()
	}
	return resp, nil
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestCrashPostGIS runs the ingest service in PostGIS mode as a subprocess,
// the command as built, kills it with SIGKILL at random moments while the
// paired sender keeps delivering and retrying, and restarts it each time.
// At the end every feature row exists exactly once and was written exactly
// once, and every delivery was acknowledged with the same body each time.
//
// The feature table has a trigger of the test's own that widens the window
// a SIGKILL aims at (each write sleeps 30 ms inside its transaction) and
// counts every write attempted, in a sequence, which no rollback undoes: a
// run killed before its commit is an attempt, but no effect, since the
// writes column is incremented inside the handler's transaction. So the
// attempts must be at least the features (else the count missed a run), and
// every feature must have exactly one committed write (else its effect ran
// twice); attempts beyond that are rolled-back runs, logged.
// (examples/chaos -kill-receiver counts the same per feature, in a run log.)
func TestCrashPostGIS(t *testing.T) {
	pgURL := postgresURL()
	suffix := fmt.Sprintf("%d", rand.Uint32())
	keyTable, featuresTable := "crash_keys_"+suffix, "crash_features_"+suffix
	conn, err := pgx.Connect(context.Background(), pgURL)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", pgURL, err)
	}
	defer conn.Close(context.Background())
	t.Cleanup(func() { dropTables(t, keyTable, featuresTable) })

	bin := ingestBinary(t)
	addr := freePort(t)
	attempts := slowCountedWrites(t, conn, pgURL, keyTable, featuresTable)
	args := []string{"-addr", addr, "-store", pgURL, "-lease", "1s", "-pg-key-table", keyTable, "-pg-features-table", featuresTable}

	// The supervisor: start, let it serve a random while, SIGKILL, repeat.
	var (
		mu    sync.Mutex
		proc  *exec.Cmd
		kills int
	)
	startProc := func() {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		mu.Lock()
		proc = cmd
		mu.Unlock()
	}
	startProc()
	stopKilling := make(chan struct{})
	killerDone := make(chan struct{})
	rng := rand.New(rand.NewPCG(1, 2))
	go func() {
		defer close(killerDone)
		for range 8 {
			select {
			case <-stopKilling:
				return
			case <-time.After(time.Duration(150+rng.IntN(450)) * time.Millisecond):
			}
			mu.Lock()
			_ = proc.Process.Signal(syscall.SIGKILL)
			_ = proc.Wait()
			kills++
			mu.Unlock()
			startProc()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		_ = proc.Process.Kill()
		_ = proc.Wait()
	}()

	rt := &recordingTransport{bodies: map[string][]string{}}
	sender, err := client.New(&http.Client{Transport: rt}, client.Config{
		Backoff:        client.Backoff{Base: 20 * time.Millisecond, Cap: 300 * time.Millisecond},
		MaxAttempts:    200,
		Deadline:       90 * time.Second,
		AttemptTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Deliver new features, four at a time, until the supervisor has killed
	// the service eight times (bounded: at most maxFeatures).
	const maxFeatures = 3000
	featureBody := func(i int) []byte {
		return fmt.Appendf(nil, `{"type":"Feature","id":"f%d","geometry":{"type":"Point","coordinates":[%d.5,%d.25]},"properties":{"n":%d}}`, i, i%180, i%90, i)
	}
	var (
		keys []string
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 4)
	)
deliver:
	for i := range maxFeatures {
		select {
		case <-killerDone:
			break deliver
		case sem <- struct{}{}:
		}
		key := fmt.Sprintf("crash-%s-%d", suffix, i)
		keys = append(keys, key)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := sender.Deliver(context.Background(), client.Delivery{
				URL: "http://" + addr + "/features", Key: key, Body: featureBody(i), ContentType: "application/geo+json",
			})
			if err != nil || res.StatusCode != http.StatusCreated {
				t.Errorf("delivery %d: %v (status %d)", i, err, res.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(stopKilling)
	<-killerDone
	features := len(keys)
	mu.Lock()
	t.Logf("%d SIGKILLs during %d deliveries", kills, features)
	if kills < 8 {
		t.Errorf("only %d SIGKILLs happened while delivering; the test proves nothing without them", kills)
	}
	mu.Unlock()

	// Every delivery again, now that the service stays up: each is a replay
	// with the body of its first acknowledgement.
	for i, key := range keys {
		res, err := sender.Deliver(context.Background(), client.Delivery{
			URL: "http://" + addr + "/features", Key: key, Body: featureBody(i), ContentType: "application/geo+json",
		})
		if err != nil || !res.Replayed {
			t.Errorf("re-delivery %d: %v, replayed=%v; want a replay", i, err, res.Replayed)
		}
	}
	rt.mu.Lock()
	for _, key := range keys {
		bodies := rt.bodies[key]
		for _, b := range bodies {
			if b != bodies[0] {
				t.Errorf("key %s acknowledged with different bodies: %q", key, bodies)
				break
			}
		}
	}
	rt.mu.Unlock()

	var rows, maxWrites, minWrites int
	err = conn.QueryRow(context.Background(),
		"SELECT count(*), coalesce(max(writes), 0), coalesce(min(writes), 0) FROM "+featuresTable).Scan(&rows, &maxWrites, &minWrites)
	if err != nil {
		t.Fatal(err)
	}
	if rows != features || maxWrites != 1 || minWrites != 1 {
		t.Fatalf("%d feature rows written between %d and %d times; want %d rows written exactly once each", rows, minWrites, maxWrites, features)
	}
	var total int
	if err := conn.QueryRow(context.Background(), `SELECT last_value FROM `+attempts).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total < features {
		t.Errorf("%d writes attempted for %d features: the count missed runs", total, features)
	}
	t.Logf("%d runs reached the write for %d features: %d rolled back (killed before the commit), each committed once", total, features, total-features)
}

// slowCountedWrites creates the service's tables (a service on them, opened
// and closed) and a trigger on the feature table that makes each write
// sleep 30 ms inside its transaction and counts it in a sequence, which a
// rollback does not undo. It returns the sequence's name, quoted; the
// trigger goes with the table, the function and the sequence at the end of
// the test.
func slowCountedWrites(t *testing.T, conn *pgx.Conn, pgURL, keyTable, featuresTable string) string {
	t.Helper()
	ctx := context.Background()
	svc, err := service.New(ctx, service.Config{Store: pgURL, KeyTable: keyTable, FeaturesTable: featuresTable})
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	seq, fn := pgx.Identifier{featuresTable + "_attempts"}.Sanitize(), pgx.Identifier{featuresTable + "_slow"}.Sanitize()
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+featuresTable)
		_, _ = conn.Exec(context.Background(), `DROP FUNCTION IF EXISTS `+fn+`() CASCADE`)
		_, _ = conn.Exec(context.Background(), `DROP SEQUENCE IF EXISTS `+seq)
	})
	for _, q := range []string{
		`CREATE SEQUENCE ` + seq,
		`CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM nextval('` + seq + `');
			PERFORM pg_sleep(0.03);
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER slow_counted BEFORE INSERT OR UPDATE ON ` + featuresTable + ` FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return seq
}

// dropTables drops what a PostgreSQL-backed service created: the key
// store's objects (pgstore.Drop) and the feature table.
func dropTables(t *testing.T, keyTable, featuresTable string) {
	conn, err := pgx.Connect(context.Background(), postgresURL())
	if err != nil {
		t.Errorf("dropping %s, %s: %v", keyTable, featuresTable, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+featuresTable); err != nil {
		t.Errorf("dropping %s: %v", featuresTable, err)
	}
	if err := pgstore.Drop(context.Background(), conn, pgstore.Config{Table: keyTable}); err != nil {
		t.Error(err)
	}
}

// dropRedisPrefix deletes, when t ends, every key the shared Redis holds
// under prefix: a test's records would otherwise stay for their retention.
func dropRedisPrefix(t *testing.T, prefix string) {
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: testkit.SharedAddr()})
		defer c.Close()
		if err := testkit.DeletePrefix(context.Background(), c, prefix); err != nil {
			t.Errorf("deleting the keys under %s: %v", prefix, err)
		}
	})
}

// postgresURL is the database the tests use: GEOIDEM_TEST_POSTGRES, or the
// loopback server of the development machines.
func postgresURL() string {
	return testkit.SharedPostgresURL()
}
