package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/keystoretest"
	"github.com/geoidem/geoidem/keystore/redisstore"
)

// holdHook is a go-redis hook that holds the first command naming key
// until release is closed, telling held when it does.
type holdHook struct {
	key     string
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.Contains(fmt.Sprint(cmd.Args()), h.key) {
			h.once.Do(func() {
				close(h.held)
				<-h.release
			})
		}
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A client's first claims that run at once do not wait for each other:
// with one of them held on its way to Redis, the client's next new key
// goes through, counted, on a standalone Redis (one script claims and
// counts) and on a Cluster (the count follows the SET), with the Store's
// automatic pipelining and without.
func TestClientCountNotSerialised(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(testing.TB) redis.UniversalClient
	}{{"Standalone", onStandalone}, {"Cluster", onCluster}} {
		for _, noPipe := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/NoAutoPipeline=%v", tc.name, noPipe), func(t *testing.T) {
				client := tc.client(t)
				held := keystoretest.Key(t)
				h := &holdHook{key: held, held: make(chan struct{}), release: make(chan struct{})}
				client.AddHook(h)
				prefix := randomPrefix(t)
				s := newStore(t, client, client, redisstore.Config{KeyPrefix: prefix, ClientKeys: 100, ClientWindow: time.Hour, NoAutoPipeline: noPipe})
				args := func() keystore.ClaimArgs {
					return keystore.ClaimArgs{Fingerprint: keystore.Fingerprint{1}, Lease: time.Minute, Token: keystore.NewToken(), Client: "c"}
				}
				ctx := t.Context()
				if c, err := s.Claim(ctx, keystoretest.Key(t), args()); err != nil || !c.Acquired {
					t.Fatalf("first claim: %v %v", c.State, err)
				}
				first := make(chan error, 1)
				go func() {
					c, err := s.Claim(ctx, held, args())
					if err == nil && !c.Acquired {
						err = fmt.Errorf("not acquired: %v", c.State)
					}
					first <- err
				}()
				<-h.held
				type result struct {
					c   keystore.Claim
					err error
				}
				next := make(chan result, 1)
				go func() {
					c, err := s.Claim(ctx, keystoretest.Key(t), args())
					next <- result{c, err}
				}()
				select {
				case r := <-next:
					close(h.release)
					if r.err != nil || !r.c.Acquired {
						t.Fatalf("the client's next new key, while its claim of another is held: %v %v", r.c.State, r.err)
					}
				case <-time.After(30 * time.Second):
					close(h.release)
					t.Fatal("the client's next new key waits for its claim of another, held on its way")
				}
				if err := <-first; err != nil {
					t.Fatalf("the held claim, once released: %v", err)
				}
				if n := clientCount(t, client, prefix, "c"); n != 3 {
					t.Errorf("the client's count is %d, want 3", n)
				}
			})
		}
	}
}
