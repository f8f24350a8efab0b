package cistatus_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// nodesLeftOut is documented as "the first thing cut from an oversized status" (owners.go: "the
// first thing to go"), but the DNS part's trim is one step: when nodesLeftOut is what pushes the
// status past the budget, readyNodes and targets are cut to 3 with it, though dropping
// nodesLeftOut alone would have fit. O's node names (up to 253 bytes, 16 per shard, per claimed
// shard too) now decide when the cluster's readyNodes list is lost.
func TestAttack33NodesLeftOutIsNotTheFirstThingToGo(t *testing.T) {
	e := publishedWriterEnv(t)
	ready := longNames("r", 1500)
	var shards []v1alpha1.ShardStatus
	for s := range 40 {
		sh := v1alpha1.ShardStatus{Name: fmt.Sprintf("s%02d", s), Domain: fmt.Sprintf("s%02d.c.z.test", s)}
		for n := range v1alpha1.MaxNodesLeftOut {
			sh.NodesLeftOut = append(sh.NodesLeftOut, v1alpha1.NodeLeftOut{
				Name: fmt.Sprintf("%s-%02d-%02d", strings.Repeat("x", 230), s, n), Reason: v1alpha1.NodeNoExecuteTaint})
		}
		shards = append(shards, sh)
	}
	e.post(t, cistatus.DNS, func(st *v1alpha1.ClusterIngressStatus) {
		st.ReadyNodes, st.ReadyNodeCount, st.Shards = ready, int32(len(ready)), shards
	})
	controllertest.Reconcile(t, e.board, e.key, 1)
	got := e.get(t).Status
	if len(got.ReadyNodes) != len(ready) {
		t.Errorf("readyNodes cut to %d of %d, though the status without nodesLeftOut fits the budget: "+
			"nodesLeftOut is not the first thing to go", len(got.ReadyNodes), len(ready))
	}
}
