package cistatus_test

import (
	"context"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
)

// TestOversizedPartNeverBlocksTheOtherParts (attack review of the one status path): O writes
// nodes (10,000 per kind are within --max-objects-per-kind; names up to 253 bytes), so the DNS
// controller's part (readyNodes, and again per shard) has no bound of its own. Past etcd's
// request limit (1.5 MiB) the API server refuses the composed status, but not as Invalid, so
// applyValidParts never runs: every part of the cluster stays unwritten, and Board.Write fails
// for the parts that must be stored before their controller goes on (routed IPs before their
// Jobs, a missing source before its removal grace, claims), for as long as the nodes stay.
func TestOversizedPartNeverBlocksTheOtherParts(t *testing.T) {
	e := publishedWriterEnv(t)
	nodes := longNames("n", 7000)
	e.post(t, cistatus.DNS, func(s *v1alpha1.ClusterIngressStatus) {
		s.ReadyNodes = nodes
		s.ReadyNodeCount = int32(len(nodes))
	})
	ci := e.get(t)
	e.board.Overlay(ci)
	ci.Status.RoutedIPs = record("192.0.2.1")
	err := e.board.Write(context.Background(), ci, cistatus.RoutedIPs)
	if got := e.get(t).Status.RoutedIPs; err != nil || len(got) != 1 {
		t.Fatalf("one owner's oversized part (O's %d nodes) kept the routed-IP record from being stored: Write: %v; stored %+v",
			len(nodes), err, got)
	}
}
