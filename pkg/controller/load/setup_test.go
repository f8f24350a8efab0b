package load

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
)

// reconcilerFor is the load controller of ci, on a fake seed and a fake user cluster holding
// objs, with a fake recorder and the clock *now; the status is written at once.
func reconcilerFor(t *testing.T, ci *v1alpha1.ClusterIngress, now *time.Time, objs ...client.Object,
) (*Reconciler, client.Client, *clusteraccess.FakeCluster, *events.FakeRecorder) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	seed := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(ci).WithObjects(ci).Build()
	access := clusteraccess.NewFake()
	user := controllertest.UserCluster(access, client.ObjectKeyFromObject(ci), objs...)
	recorder := events.NewFakeRecorder(100)
	r := &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed).WriteThrough(), Recorder: recorder,
		Now: func() time.Time { return *now }}
	return r, seed, user, recorder
}

// routerDeployment is a shard's router Deployment with ready routers.
func routerDeployment(shard string, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: names.RouterName(shard)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready}}
}

// renew writes l over the user cluster's Lease of the same name, as a reporter renews it.
func renew(t *testing.T, user *clusteraccess.FakeCluster, l *coordinationv1.Lease) {
	t.Helper()
	cur := &coordinationv1.Lease{}
	if err := user.Client.Get(context.Background(), client.ObjectKeyFromObject(l), cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations, cur.Spec = l.Annotations, l.Spec
	if err := user.Client.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
}
