package testkit

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// waitEpochs waits until the node at target knows the current configEpoch
// of every master in masters: until its CLUSTER NODES shows, for each, the
// epoch that master's own CLUSTER NODES shows for itself.
//
// CLUSTER SETSLOT NODE on a target that was importing the slot bumps the
// target's configEpoch only when it is not already the highest the target
// knows of. A migration to master X bumps X's epoch to E and broadcasts it;
// should the next migration, from X to Y, reach Y's SETSLOT NODE before Y
// has heard of E (a cluster bus link being re-established, a busy node),
// Y's own epoch, E-1, is the highest it knows: nothing is bumped, and Y
// claims the slot with an epoch below X's. The nodes that still see X serve
// the slot (X itself, until its own SETSLOT NODE) answer Y's claim with an
// UPDATE about X, within milliseconds; Y gives the slot up and, holding
// keys in a slot it no longer serves, deletes them (Redis 7.0 does not
// replicate that deletion: Y's replica keeps them). Once Y knows E, its
// SETSLOT NODE bumps its epoch to E+1 or more, and its claim wins.
func (c *Cluster) waitEpochs(ctx context.Context, target string, masters []string) error {
	want := map[string]uint64{} // node ID: its configEpoch
	for _, m := range masters {
		nodes, err := c.Nodes(ctx, m)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Myself {
				want[n.ID] = n.Epoch
			}
		}
	}
	deadline := time.Now().Add(settle)
	for {
		nodes, err := c.Nodes(ctx, target)
		if err != nil {
			return err
		}
		var behind []string
		for id, epoch := range want {
			seen := false
			for _, n := range nodes {
				if n.ID == id && n.Epoch >= epoch {
					seen = true
				}
			}
			if !seen {
				behind = append(behind, fmt.Sprintf("%s at %d", id, epoch))
			}
		}
		if len(behind) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("rediscluster: %s does not know the current configEpoch of %s after %v", target, strings.Join(behind, ", "), settle)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
