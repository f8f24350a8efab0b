package routedips

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestBoundedWrites: served RoutedIPs first, refused ones at most maxRefusedWritesPerPass, all at
// most maxStatusWritesPerPass; the rest is reported for a later pass.
func TestBoundedWrites(t *testing.T) {
	var pending []statusWrite
	for i := range 30 {
		pending = append(pending, statusWrite{ri: &v1alpha1.RoutedIP{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}}, refused: i%2 == 0})
	}
	now, more := boundedWrites(pending)
	refused := 0
	for i, w := range now {
		if w.refused {
			refused++
		} else if refused > 0 {
			t.Errorf("write %d: a served RoutedIP after a refused one", i)
		}
	}
	if len(now) != maxStatusWritesPerPass || refused != 1 || !more {
		t.Errorf("%d writes (%d refused), more %v", len(now), refused, more)
	}
	if now, more := boundedWrites(pending[:4]); len(now) != 4 || more {
		t.Errorf("a few: %d writes, more %v", len(now), more)
	}
}

// TestRefusedRoutedIPsCostBoundedWrites: a cluster owner creating many RoutedIPs the seed refuses
// costs a bounded number of user-cluster writes per pass (each may wait for the owner's API
// server while no other cluster moves).
func TestRefusedRoutedIPsCostBoundedWrites(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "many"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "many"}, Profile: "p", ClusterID: "many",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: v1alpha1.ResolveShards(nil)}}
	must(t, seed.Client.Create(ctx, ci))
	// The seed is shared by the package's tests: a record left behind would hold its address.
	t.Cleanup(func() { forget(seed.Client, ci) })
	key := client.ObjectKeyFromObject(ci)
	now := time.Now()
	objs := []client.Object{node("n1", now)}
	for i := range 40 {
		objs = append(objs, &v1alpha1.RoutedIP{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("r%d", i)},
			Spec: v1alpha1.RoutedIPSpec{ClassName: "none", Address: "198.51.100.7", ServiceRef: v1alpha1.ServiceReference{Name: "svc"}}})
	}
	access := clusteraccess.NewFake()
	u := controllertest.UserCluster(access, key, objs...)
	u.Caps.CRDs = true
	var writes int
	u.Client = interceptor.NewClient(u.Client.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		}})
	r := &Reconciler{Client: seed.Client, APIReader: seed.Client, Access: access, JobNamespace: ns, Clock: clocktesting.NewFakePassiveClock(now), Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	controllertest.Reconcile(t, r, key, 1)
	if writes == 0 || writes > maxRefusedWritesPerPass {
		t.Errorf("%d status writes for 40 refused RoutedIPs in one pass, want 1..%d", writes, maxRefusedWritesPerPass)
	}
}
