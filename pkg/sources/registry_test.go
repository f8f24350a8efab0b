package sources

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestRegistryFor(t *testing.T) {
	capi, secrets := NewClusterAPI(nil, logr.Discard()), NewKubeconfigSecrets(nil)
	r := Registry{capi, secrets}
	if r.For(v1alpha1.SourceKindCluster) != capi || r.For(v1alpha1.SourceKindSecret) != secrets ||
		r.For(v1alpha1.SourceKindKubermatic) != nil {
		t.Fatal("For does not find each registered kind, or finds one not registered")
	}
}

// TestWatchKeys: a listing yields the key of each source that has one, in the list's order.
func TestWatchKeys(t *testing.T) {
	c := seed(t, kkpCluster("cluster-kkp1", ""), kkpCluster("", "", func(k *KubermaticCluster) { k.Name = "new" }),
		kubeconfigSecret("ns", map[string]string{v1alpha1.KubeconfigSecretLabel: ""}, nil),
		kubeconfigSecret("unlabelled", nil, nil))
	for _, tc := range []struct {
		p    Provider
		want []types.NamespacedName
	}{
		{NewKubermatic(nil, logr.Discard()), []types.NamespacedName{{Namespace: "cluster-kkp1", Name: "kkp1"}}},
		{NewKubeconfigSecrets([]string{"ns"}), []types.NamespacedName{{Namespace: "ns", Name: "edge"}}},
		{NewClusterAPI(nil, logr.Discard()), nil},
	} {
		got, err := tc.p.Watch().Keys(context.Background(), c)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys %v (%v), want %v", tc.p.Description(), got, err, tc.want)
		}
	}
}

// TestEventHandler: an event enqueues its source's key; an update that moves a Kubermatic
// Cluster to another namespace enqueues the ClusterIngress keys before and after.
func TestEventHandler(t *testing.T) {
	h := EventHandler(NewKubermatic(nil, logr.Discard()).Watch())
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: kkpCluster("", "")}, q)
	if q.Len() != 0 {
		t.Fatal("a Kubermatic Cluster without a namespace enqueued a key")
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: kkpCluster("a", ""), ObjectNew: kkpCluster("b", "")}, q)
	var got []string
	for q.Len() > 0 {
		req, _ := q.Get()
		got = append(got, req.String())
		q.Done(req)
	}
	slices.Sort(got)
	if want := []string{"a/kkp1", "b/kkp1"}; !slices.Equal(got, want) {
		t.Fatalf("enqueued %v, want %v", got, want)
	}
}

func TestWhenAvailable(t *testing.T) {
	capi := NewClusterAPI(nil, logr.Discard())
	var ran []string
	WhenAvailable(NewKubeconfigSecrets(nil), func() { ran = append(ran, "secrets") })
	WhenAvailable(capi, func() { ran = append(ran, "capi") })
	if !slices.Equal(ran, []string{"secrets"}) {
		t.Fatalf("ran %v before Cluster API was found", ran)
	}
	capi.Discovery().Found()
	if !slices.Equal(ran, []string{"secrets", "capi"}) || !Available(capi) {
		t.Fatalf("ran %v once Cluster API was found", ran)
	}
}
