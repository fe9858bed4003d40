package testkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// migrateBatch is how many keys one MIGRATE moves.
const migrateBatch = 10

// Slot returns the hash slot of key, as Redis Cluster computes it: CRC16
// (XMODEM) of the key's hash tag, the part between the first "{" and the
// next "}" if that part is not empty, or of the whole key, modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// MigrateSlot moves slot, and the keys in it, from the master that serves
// it to the master at to, as redis-cli --cluster reshard does: CLUSTER
// SETSLOT IMPORTING on the target and MIGRATING on the source, MIGRATE of
// the slot's keys in batches of ten, and CLUSTER SETSLOT NODE on the target,
// the source and the other masters. Before the target's SETSLOT NODE it
// waits until the target's CLUSTER NODES shows every master's current
// configEpoch (see waitEpochs): without that wait a migration right after
// another can lose the slot's keys. Meanwhile clients of the slot meet ASK
// (a key already moved, or a new one) and, once the slot is the target's,
// MOVED. It returns how many keys it moved; nothing is done when to
// already serves slot. The replicas hear of the move by gossip, later:
// [Cluster.WaitHealthy] waits until every node agrees.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to string) (int, error) {
	if slot < 0 || slot >= Slots {
		return 0, fmt.Errorf("rediscluster: slot %d out of range", slot)
	}
	from, err := c.MasterOf(ctx, slot)
	if err != nil {
		return 0, err
	}
	if from == to {
		return 0, nil
	}
	src, err := c.client(from)
	if err != nil {
		return 0, err
	}
	dst, err := c.client(to)
	if err != nil {
		return 0, err
	}
	fromID, err := c.idOf(ctx, from)
	if err != nil {
		return 0, err
	}
	toID, err := c.idOf(ctx, to)
	if err != nil {
		return 0, err
	}
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err(); err != nil {
		return 0, fmt.Errorf("rediscluster: SETSLOT %d IMPORTING on %s: %w", slot, to, err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err(); err != nil {
		return 0, fmt.Errorf("rediscluster: SETSLOT %d MIGRATING on %s: %w", slot, from, err)
	}
	host, port, _ := net.SplitHostPort(to)
	moved := 0
	for range Slots { // bounded: each round moves up to migrateBatch keys or ends
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			return moved, fmt.Errorf("rediscluster: GETKEYSINSLOT %d on %s: %w", slot, from, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return moved, fmt.Errorf("rediscluster: MIGRATE of slot %d from %s to %s: %w", slot, from, to, err)
		}
		moved += len(keys)
	}
	masters, err := c.Masters(ctx)
	if err != nil {
		return moved, err
	}
	order := []string{to, from}
	for _, m := range masters {
		if !slices.Contains(order, m) {
			order = append(order, m)
		}
	}
	// Before the target claims the slot, it must know every master's
	// current configEpoch, so that its SETSLOT NODE bumps its own above
	// them all (see waitEpochs).
	if err := c.waitEpochs(ctx, to, masters); err != nil {
		return moved, err
	}
	setNode := func() error {
		for _, m := range order {
			cl, err := c.client(m)
			if err != nil {
				return err
			}
			if err := cl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err(); err != nil {
				return fmt.Errorf("rediscluster: SETSLOT %d NODE on %s: %w", slot, m, err)
			}
		}
		return nil
	}
	if err := setNode(); err != nil {
		return moved, err
	}
	// Should the cluster settle on another owner (the target's epoch bump
	// lost to another's), the target bumps its epoch again and claims the
	// slot anew, as redis-cli --cluster fix would.
	fix := func() error {
		c.Reclaims++
		if err := dst.Do(ctx, "CLUSTER", "BUMPEPOCH").Err(); err != nil {
			return fmt.Errorf("rediscluster: BUMPEPOCH on %s: %w", to, err)
		}
		return setNode()
	}
	return moved, c.waitOwner(ctx, slot, to, fix)
}

// waitOwner waits until every live node sees the master at addr serve slot.
// A migration bumps the target's configEpoch without the other masters'
// agreement; a second migration that bumps another master's epoch past it
// before every node has heard of the first can leave nodes disagreeing on
// the first slot for good (the stale owner's epoch now wins), so
// MigrateSlot waits for the whole cluster before it returns.
func (c *Cluster) waitOwner(ctx context.Context, slot int, addr string, fix func() error) error {
	deadline := time.Now().Add(settle)
	nextFix := time.Now().Add(2 * time.Second)
	for {
		var wrong []string
		for a := range c.clients {
			cl := c.clients[a]
			slots, err := cl.ClusterShards(ctx).Result()
			if err != nil {
				return fmt.Errorf("rediscluster: CLUSTER SHARDS on %s: %w", a, err)
			}
			if owner := ownerIn(slots, slot); owner != addr {
				wrong = append(wrong, a+" sees "+owner)
			}
		}
		if len(wrong) == 0 {
			return nil
		}
		if time.Now().After(nextFix) {
			if err := fix(); err != nil {
				return err
			}
			nextFix = time.Now().Add(2 * time.Second)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("rediscluster: slot %d not served by %s everywhere after %v: %s", slot, addr, settle, strings.Join(wrong, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownerIn returns the address of the master that serves slot in a CLUSTER
// SHARDS reply, "" if none does.
func ownerIn(shards []redis.ClusterShard, slot int) string {
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int(r.Start) <= slot && slot <= int(r.End) {
				for _, n := range sh.Nodes {
					if n.Role == "master" && n.Health != "fail" {
						return fmt.Sprintf("%s:%d", n.IP, n.Port)
					}
				}
			}
		}
	}
	return ""
}

// FailoverMode is the option of CLUSTER FAILOVER.
type FailoverMode string

const (
	// Planned is CLUSTER FAILOVER: the replica has its master stop its
	// clients, catches up with its replication stream, and takes over with
	// the other masters' agreement. Nothing acknowledged is lost.
	Planned FailoverMode = ""
	// Force is CLUSTER FAILOVER FORCE: the replica takes over with the
	// masters' agreement without waiting for its master (which may be
	// down); writes it had not received are lost.
	Force FailoverMode = "FORCE"
	// Takeover is CLUSTER FAILOVER TAKEOVER: the replica takes over
	// without asking anyone.
	Takeover FailoverMode = "TAKEOVER"
)

// Failover sends CLUSTER FAILOVER (with mode's option) to a replica of the
// master at master and waits until that replica serves the master's slots
// and the cluster is healthy again. It returns the replica's address, the
// new master's; the old master becomes its replica.
//
// It first waits for the cluster to be healthy: a replica that has not yet
// heard of a slot migrated away from its master claims that slot in its
// election, and the masters refuse it their votes.
func (c *Cluster) Failover(ctx context.Context, master string, mode FailoverMode) (string, error) {
	if err := c.WaitHealthy(ctx); err != nil {
		return "", err
	}
	replica, err := c.ReplicaOf(ctx, master)
	if err != nil {
		return "", err
	}
	cl, err := c.client(replica)
	if err != nil {
		return "", err
	}
	args := []any{"CLUSTER", "FAILOVER"}
	if mode != Planned {
		args = append(args, string(mode))
	}
	if err := cl.Do(ctx, args...).Err(); err != nil {
		return "", fmt.Errorf("rediscluster: CLUSTER FAILOVER %s on %s: %w", mode, replica, err)
	}
	if err := c.waitMaster(ctx, replica); err != nil {
		return "", err
	}
	return replica, c.WaitHealthy(ctx)
}

// Kill SIGKILLs the master at master, an unplanned failure, and waits until
// the other nodes have found it failed and its replica serves its slots.
// It returns the replica's address. The killed node stays down. Like
// Failover, it first waits for the cluster to be healthy.
func (c *Cluster) Kill(ctx context.Context, master string) (string, error) {
	if err := c.WaitHealthy(ctx); err != nil {
		return "", err
	}
	replica, err := c.ReplicaOf(ctx, master)
	if err != nil {
		return "", err
	}
	s := c.server(master)
	s.Kill()
	c.clients[master].Close()
	delete(c.clients, master)
	if err := c.waitMaster(ctx, replica); err != nil {
		return "", err
	}
	return replica, c.WaitHealthy(ctx)
}

// waitMaster waits until the node at addr reports the master role.
func (c *Cluster) waitMaster(ctx context.Context, addr string) error {
	cl, err := c.client(addr)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(settle)
	for {
		role, err := cl.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("rediscluster: %s is not a master after %v: %v %v", addr, settle, role, errors.Join(err, ctx.Err()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitHealthy waits until every live node reports cluster_state:ok, all of
// them see the same master for every slot, and every live replica's link
// to its master is up, on both ends: the master lists it online.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(settle)
	for {
		err := c.healthy(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("rediscluster: not healthy after %v: %w", settle, errors.Join(err, ctx.Err()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthy checks once what WaitHealthy waits for.
func (c *Cluster) healthy(ctx context.Context) error {
	var first map[int]string
	for addr, cl := range c.clients {
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", addr)
		}
		nodes, err := c.Nodes(ctx, addr)
		if err != nil {
			return err
		}
		owner := map[int]string{}
		for _, n := range nodes {
			if n.Master && !n.Failed {
				for _, s := range n.Slots {
					owner[s] = n.Addr
				}
			}
		}
		if len(owner) != Slots {
			return fmt.Errorf("%s sees %d slots served", addr, len(owner))
		}
		if first == nil {
			first = owner
		} else {
			for s, a := range owner {
				if first[s] != a {
					return fmt.Errorf("nodes disagree on slot %d: %s or %s", s, a, first[s])
				}
			}
		}
		repl, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("replica %s: link to its master is down", addr)
		}
		// A replica reports its link up while its master may still be
		// waiting to start its sync (state=wait_bgsave): until the master
		// lists it online, it is not the master's replica in INFO.
		for line := range strings.Lines(repl) {
			if strings.HasPrefix(line, "slave") && strings.Contains(line, ",state=") && !strings.Contains(line, ",state=online,") {
				return fmt.Errorf("master %s: a replica not yet online: %s", addr, strings.TrimSpace(line))
			}
		}
		if strings.Contains(repl, "role:master") && !slices.Contains(slices.Collect(maps.Values(owner)), addr) {
			return fmt.Errorf("%s is a master without slots (a demoted master not yet a replica)", addr)
		}
	}
	return nil
}

// Client returns a go-redis Cluster client of the cluster with the given
// options; Addrs is set to every live node.
func (c *Cluster) Client(o redis.ClusterOptions) *redis.ClusterClient {
	for addr := range c.clients {
		o.Addrs = append(o.Addrs, addr)
	}
	slices.Sort(o.Addrs)
	return redis.NewClusterClient(&o)
}

// WaitReplicated waits until the replica of every live master has
// acknowledged its master's whole replication stream as it stood at the
// call (INFO replication: each slave's offset against master_repl_offset).
func (c *Cluster) WaitReplicated(ctx context.Context) error {
	masters, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	for _, m := range masters {
		cl, err := c.client(m)
		if err != nil {
			return err
		}
		target := int64(-1)
		deadline := time.Now().Add(settle)
		for {
			info, err := cl.Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Errorf("rediscluster: INFO replication on %s: %w", m, err)
			}
			off, replicas := replOffsets(info)
			if target < 0 {
				target = off
			}
			if len(replicas) > 0 && slices.Min(replicas) >= target {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("rediscluster: replicas of %s at %v, not at %d after %v", m, replicas, target, settle)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// replOffsets reads a master's INFO replication: its master_repl_offset and
// the offset each connected replica acknowledged.
func replOffsets(info string) (master int64, replicas []int64) {
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			fmt.Sscan(v, &master)
		}
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "offset=") {
			for f := range strings.SplitSeq(line, ",") {
				if v, ok := strings.CutPrefix(f, "offset="); ok {
					var o int64
					fmt.Sscan(v, &o)
					replicas = append(replicas, o)
				}
			}
		}
	}
	return master, replicas
}

// Restart starts again a node that Kill killed, on its port and in its
// directory, and waits until the cluster is healthy: the node, whose slots
// its replica has taken over, rejoins as that replica's replica.
func (c *Cluster) Restart(ctx context.Context, addr string) error {
	s := c.server(addr)
	if s == nil {
		return fmt.Errorf("rediscluster: no node at %s", addr)
	}
	if _, live := c.clients[addr]; live {
		return fmt.Errorf("rediscluster: %s is running", addr)
	}
	if err := s.Restart(ctx); err != nil {
		return err
	}
	c.clients[addr] = newNodeClient(addr)
	return c.WaitHealthy(ctx)
}
