package memstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/memstore"
)

// A full store refuses new keys only until its oldest completed record
// is older than the floor (an hour by default): then that record makes
// room, oldest first, and the refusal before said when.
func TestFullStoreEvictsRecordsPastTheFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 3})
		complete(t, s, "first", 24*time.Hour, "a")
		time.Sleep(10 * time.Minute)
		complete(t, s, "second", 30*time.Hour, "b")
		time.Sleep(time.Minute)
		complete(t, s, "third", 24*time.Hour, "c")
		_, err := testkit.Claim(context.Background(), s, "new", fp, time.Minute)
		var fe *keystore.FullError
		if !errors.As(err, &fe) || fe.Client {
			t.Fatalf("a new key in a store full of records younger than the floor: %v, want the store's FullError", err)
		}
		if want := 49 * time.Minute; fe.RetryAfter != want {
			t.Fatalf("RetryAfter %v, want %v: when the oldest record passes the floor, not the end of its retention", fe.RetryAfter, want)
		}
		time.Sleep(fe.RetryAfter)
		if c := claim(t, s, "new", 24*time.Hour); !c.Acquired {
			t.Fatalf("at its RetryAfter: %v, want acquired", c.State)
		}
		for key, want := range map[string]keystore.State{"first": keystore.Absent, "second": keystore.Completed, "third": keystore.Completed} {
			e, err := s.Inspect(context.Background(), key)
			if err != nil || e.State != want {
				t.Errorf("%s: %v %v, want %v (the oldest record evicted, the others kept)", key, e.State, err, want)
			}
		}
		if st := s.Stats(); st.Evicted != 1 || st.Refused != 1 {
			t.Fatalf("stats %+v, want 1 eviction and 1 refusal", st)
		}
		// Oldest first by completion, whatever the retention: "second"
		// ends last but was completed first.
		time.Sleep(10 * time.Minute)
		if c := claim(t, s, "newer", time.Minute); !c.Acquired {
			t.Fatalf("the next new key: %v, want acquired", c.State)
		}
		if e, _ := s.Inspect(context.Background(), "second"); e.State != keystore.Absent {
			t.Fatalf("second: %v, want evicted (completed before third)", e.State)
		}
		if e, _ := s.Inspect(context.Background(), "third"); e.State != keystore.Completed {
			t.Fatalf("third: %v, want kept", e.State)
		}
	})
}

// A negative floor keeps every record for its whole retention, as
// before: the refusal says when the earliest retention ends.
func TestNegativeFloorNeverEvicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 1, EvictAfter: -1})
		complete(t, s, "only", 24*time.Hour, "a")
		time.Sleep(2 * time.Hour)
		_, err := testkit.Claim(context.Background(), s, "new", fp, time.Minute)
		var fe *keystore.FullError
		if !errors.As(err, &fe) || fe.RetryAfter != 22*time.Hour {
			t.Fatalf("without eviction: %v, want a FullError with RetryAfter 22h", err)
		}
		if st := s.Stats(); st.Evicted != 0 {
			t.Fatalf("stats %+v, want no eviction", st)
		}
	})
}

// Records are evicted only when the store is full: a store with room
// keeps every record for its retention; and never a key in flight.
func TestEvictsOnlyWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 3, EvictAfter: time.Minute})
		complete(t, s, "old", 24*time.Hour, "a")
		held := claim(t, s, "held", 24*time.Hour)
		time.Sleep(2 * time.Hour)
		claim(t, s, "fits", time.Hour)
		if e, _ := s.Inspect(context.Background(), "old"); e.State != keystore.Completed {
			t.Fatalf("old, with room to spare: %v, want kept", e.State)
		}
		claim(t, s, "evicts", time.Hour)
		if e, _ := s.Inspect(context.Background(), "old"); e.State != keystore.Absent {
			t.Fatalf("old, once the store was full: %v, want evicted", e.State)
		}
		if _, err := testkit.Claim(context.Background(), s, "refused", fp, time.Minute); !errors.Is(err, keystore.ErrStoreFull) {
			t.Fatalf("a store full of keys in flight: %v, want ErrStoreFull", err)
		}
		if err := s.Complete(context.Background(), "held", held.Token, record.Append(nil, record.Record{StatusCode: 201}), time.Hour); err != nil {
			t.Fatalf("the key in flight: %v, want it still held", err)
		}
	})
}

// A Release by a token that holds nothing leaves a fence on an absent
// key only where there is room: it never evicts a record for it.
func TestFenceNeverEvicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memstore.New(memstore.Config{MaxEntries: 1, EvictAfter: time.Minute})
		complete(t, s, "kept", 24*time.Hour, "a")
		time.Sleep(time.Hour)
		if err := s.Release(context.Background(), "absent", keystore.NewToken()); !errors.Is(err, keystore.ErrLeaseLost) {
			t.Fatalf("Release of an absent key: %v, want ErrLeaseLost", err)
		}
		if e, _ := s.Inspect(context.Background(), "kept"); e.State != keystore.Completed || s.Stats().Evicted != 0 {
			t.Fatalf("after the fence: kept is %v, %+v; want it kept, nothing evicted", e.State, s.Stats())
		}
	})
}

// Evictions are logged: the first at once, then at most one line a
// minute counting those since.
func TestEvictionsAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		s := memstore.New(memstore.Config{MaxEntries: 2, EvictAfter: time.Second, Logger: log})
		for i := range 6 {
			complete(t, s, fmt.Sprint("k", i), time.Hour, "a")
			time.Sleep(2 * time.Second)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "evicted=1 ") || !strings.Contains(lines[0], "evicted_total=1") {
			t.Fatalf("log after 4 evictions within a minute:\n%s\nwant one warning of the first", buf.String())
		}
		time.Sleep(time.Minute)
		complete(t, s, "late", time.Hour, "a")
		lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], "evicted=4 ") || !strings.Contains(lines[1], "evicted_total=5") {
			t.Fatalf("log after a fifth eviction a minute later:\n%s\nwant a second line counting the 4 since the first", buf.String())
		}
	})
}
