package shards

import (
	"strings"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestRenderedKindsAreWatchedAndPrunable: every kind the renderers produce is cached by the
// user-cluster engagement (so drift wakes the controller) and listed for pruning and cleanup (so
// nothing is left behind). Three lists used to have to agree by hand.
func TestRenderedKindsAreWatchedAndPrunable(t *testing.T) {
	caps := clusteraccess.Capabilities{AdmissionPolicy: true}
	routes := routekinds.Registry{routekinds.Ingress{}}
	var shards []v1alpha1.ShardSpec
	for _, p := range []v1alpha1.Publishing{v1alpha1.PublishHostNetwork, v1alpha1.PublishNodePort, v1alpha1.PublishLoadBalancer, v1alpha1.PublishVIP} {
		shards = append(shards, v1alpha1.ShardSpec{Name: strings.ToLower(string(p)), Publishing: p, Replicas: ptr.To[int32](3)})
	}
	objs, err := render.DesiredObjects(render.DesiredInput{RouteKinds: routes, ClusterDomain: "c1.z", TTL: 60,
		Shards: v1alpha1.ResolveShards(shards), ShardgateUser: "u", AdmissionPolicy: true, Canary: true,
		TLS: &render.TLSInput{Cert: []byte("c"), Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	watched := map[string]bool{}
	for _, o := range append(clusteraccess.ManagedKinds(caps), clusteraccess.RouteInputs(routes)...) {
		gvk, err := apiutil.GVKForObject(o, clientgoscheme.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		watched[gvk.Kind] = true
	}
	kinds, err := prunableKinds(clientgoscheme.Scheme, caps, routes)
	if err != nil {
		t.Fatal(err)
	}
	prunable := map[string]bool{}
	for _, k := range kinds {
		prunable[k.kind] = true
	}
	seen := map[string]bool{}
	for _, o := range objs {
		k := o.GetKind()
		seen[k] = true
		if !watched[k] {
			t.Errorf("%s is rendered but not watched: its drift would go unnoticed", k)
		}
		if !prunable[k] {
			t.Errorf("%s is rendered but not prunable: it would be left behind", k)
		}
	}
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget", "ValidatingAdmissionPolicy", "IngressClass", "Namespace", "ConfigMap", "Secret", "RoleBinding", "Ingress"} {
		if !seen[k] {
			t.Errorf("the render covered no %s: the test would miss it", k)
		}
	}
}
