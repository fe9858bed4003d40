// This file starts a private Redis Cluster on loopback, three
// masters and one replica each, for the tests and the benchmarks that change
// its topology while clients use it: a slot migrated from one master to
// another ([Cluster.MigrateSlot]), a replica promoted by CLUSTER FAILOVER
// ([Cluster.Failover]) or after its master was SIGKILLed ([Cluster.Kill]).
//
// Every node is a redis-server started by StartRedis on a free
// port (whose cluster bus port, port+10000, is free too), in a temporary
// directory of its own; the cluster is formed by `redis-cli --cluster
// create … --cluster-replicas 1 --cluster-yes`, so redis-server and
// redis-cli must be on PATH (scripts/services installs Redis 7). The nodes
// run with cluster-node-timeout [NodeTimeout], so that a killed master is
// replaced within a few seconds. [Cluster.Close] kills every node and
// removes their directories; on Linux a node also dies with the process
// that started it.
//
// A Cluster's methods are not safe for concurrent use; its nodes are, as
// any Redis is, for the clients that use them meanwhile.

package testkit

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeTimeout is the nodes' cluster-node-timeout: how long a master may be
// unreachable before the others mark it failed and its replica takes over.
const NodeTimeout = time.Second

// settle bounds every wait for the cluster to agree on a change.
const settle = 30 * time.Second

// ClusterOptions configures a Cluster. The zero value is three masters with a
// replica each, without persistence.
type ClusterOptions struct {
	// Masters is the number of masters (default 3, at least 3: a failover
	// needs a majority of the masters to vote).
	Masters int
	// AppendFsync runs every node with appendonly yes and this appendfsync
	// policy ("always", "everysec" or "no"). Empty: no persistence.
	AppendFsync string
	// Args are further redis-server arguments for every node.
	Args []string
}

// Cluster is a running Redis Cluster of masters with one replica each.
type Cluster struct {
	servers []*RedisServer
	clients map[string]*redis.Client // by address, one per node

	// Reclaims counts the migrations whose new owner did not win at first
	// (every node kept, or went back to, the old owner) and that
	// MigrateSlot claimed again. A node that loses a slot it holds keys of
	// to an owner with a higher epoch deletes those keys: a migration that
	// needed a reclaim may have lost keys.
	Reclaims int
}

// StartCluster starts the nodes, forms the cluster and waits until every node
// reports cluster_state:ok, agrees on the slots, and every replica is in
// sync with its master.
func StartCluster(ctx context.Context, o ClusterOptions) (c *Cluster, err error) {
	masters := o.Masters
	if masters == 0 {
		masters = 3
	}
	if masters < 3 {
		return nil, fmt.Errorf("rediscluster: %d masters; a cluster needs at least 3", masters)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, fmt.Errorf("rediscluster: redis-cli not on PATH (scripts/services installs Redis 7): %w", err)
	}
	c = &Cluster{clients: map[string]*redis.Client{}}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout / time.Millisecond)),
		"--cluster-replica-validity-factor", "0", "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"},
		o.Args...)
	for range 2 * masters {
		s, err := StartRedis(ctx, RedisOptions{AppendFsync: o.AppendFsync, Args: args})
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, s)
		c.clients[s.Addr()] = newNodeClient(s.Addr())
	}
	create := append([]string{"--cluster", "create"}, c.Addrs()...)
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, settle)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "redis-cli", create...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("rediscluster: redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Addrs returns the address of every node, masters and replicas, in the
// order they were started.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.servers))
	for i, s := range c.servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Close kills every node and removes their directories.
func (c *Cluster) Close() {
	for _, cl := range c.clients {
		cl.Close()
	}
	for _, s := range c.servers {
		s.Stop()
	}
}

// newNodeClient is the cluster's own client of one node.
func newNodeClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
}

// server returns the node at addr.
func (c *Cluster) server(addr string) *RedisServer {
	for _, s := range c.servers {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// client returns the client of the node at addr, or an error if no node
// of the cluster has that address.
func (c *Cluster) client(addr string) (*redis.Client, error) {
	cl, ok := c.clients[addr]
	if !ok {
		return nil, fmt.Errorf("rediscluster: no node at %s", addr)
	}
	return cl, nil
}

// Node is one node of the cluster as CLUSTER NODES describes it.
type Node struct {
	ID     string
	Addr   string // 127.0.0.1:port
	Master bool
	Of     string // a replica's master's ID
	Failed bool   // flagged fail (or fail?) by the node asked
	Myself bool   // the node asked
	Epoch  uint64 // its configEpoch, as the node asked knows it
	Slots  []int  // a master's slots
}

// Nodes returns the cluster as the node at addr sees it.
func (c *Cluster) Nodes(ctx context.Context, addr string) ([]Node, error) {
	cl, err := c.client(addr)
	if err != nil {
		return nil, err
	}
	text, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("rediscluster: CLUSTER NODES on %s: %w", addr, err)
	}
	return parseNodes(text)
}

// parseNodes parses the reply of CLUSTER NODES.
func parseNodes(text string) ([]Node, error) {
	var nodes []Node
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := Node{ID: f[0], Addr: strings.SplitN(f[1], "@", 2)[0]}
		flags := strings.Split(f[2], ",")
		n.Master = slices.Contains(flags, "master")
		n.Failed = slices.Contains(flags, "fail") || slices.Contains(flags, "fail?")
		n.Myself = slices.Contains(flags, "myself")
		epoch, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rediscluster: bad config epoch %q", f[6])
		}
		n.Epoch = epoch
		if f[3] != "-" {
			n.Of = f[3]
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being imported or migrated
				continue
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("rediscluster: bad slot range %q", r)
			}
			for s := a; s <= b; s++ {
				n.Slots = append(n.Slots, s)
			}
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, errors.New("rediscluster: CLUSTER NODES is empty")
	}
	return nodes, nil
}

// Masters returns the addresses of the masters that are up, as the first
// live node sees them, in address order.
func (c *Cluster) Masters(ctx context.Context) ([]string, error) {
	nodes, err := c.liveView(ctx)
	if err != nil {
		return nil, err
	}
	var masters []string
	for _, n := range nodes {
		if n.Master && !n.Failed && len(n.Slots) > 0 {
			masters = append(masters, n.Addr)
		}
	}
	slices.Sort(masters)
	return masters, nil
}

// MasterOf returns the address of the master that serves slot.
func (c *Cluster) MasterOf(ctx context.Context, slot int) (string, error) {
	nodes, err := c.liveView(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Master && !n.Failed && slices.Contains(n.Slots, slot) {
			return n.Addr, nil
		}
	}
	return "", fmt.Errorf("rediscluster: no master serves slot %d", slot)
}

// ReplicaOf returns the address of a replica that the master at master
// reports online (INFO replication).
func (c *Cluster) ReplicaOf(ctx context.Context, master string) (string, error) {
	cl, err := c.client(master)
	if err != nil {
		return "", err
	}
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return "", fmt.Errorf("rediscluster: INFO replication on %s: %w", master, err)
	}
	for line := range strings.Lines(info) {
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, "state=online") {
			continue
		}
		var ip, port string
		for f := range strings.SplitSeq(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
			if v, ok := strings.CutPrefix(f, "ip="); ok {
				ip = v
			}
			if v, ok := strings.CutPrefix(f, "port="); ok {
				port = v
			}
		}
		if _, live := c.clients[ip+":"+port]; live {
			return ip + ":" + port, nil
		}
	}
	return "", fmt.Errorf("rediscluster: no live replica of %s", master)
}

// liveView is CLUSTER NODES from the first node that answers.
func (c *Cluster) liveView(ctx context.Context) ([]Node, error) {
	var errs []error
	for _, addr := range c.Addrs() {
		if nodes, err := c.Nodes(ctx, addr); err == nil {
			return nodes, nil
		} else {
			errs = append(errs, err)
		}
	}
	return nil, errors.Join(errs...)
}

// idOf returns the node ID of the node at addr, as that node reports it.
func (c *Cluster) idOf(ctx context.Context, addr string) (string, error) {
	cl, err := c.client(addr)
	if err != nil {
		return "", err
	}
	id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return "", fmt.Errorf("rediscluster: CLUSTER MYID on %s: %w", addr, err)
	}
	return id, nil
}
