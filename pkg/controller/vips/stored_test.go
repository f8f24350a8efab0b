package vips

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestNewAllocationIsStoredBeforeReconcileEnds (attack review of the one status path): the shard
// controller renders keepalived from the board, so a VIP known only to this replica's memory
// would be acted on and, after a restart, could be planned for another cluster of the L2 domain.
// A changed allocation is written, not merely posted; holders alone are posted.
func TestNewAllocationIsStoredBeforeReconcileEnds(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Clock: clocktesting.NewFakePassiveClock(time.Now()),
		Board: cistatus.NewBoard(seed.Client)} // no write-through: posts wait for the writer
	a := vipCI(t, seed.Client, ns, "a", 2)
	controllertest.UserCluster(access, a)
	controllertest.Reconcile(t, r, a, 1)
	if got, _ := vipsOf(t, seed.Client, a); got != "10.9.0.1#1@ 10.9.0.2#2@" {
		t.Fatalf("the allocation is not stored when Reconcile returns: %q", got)
	}
}
