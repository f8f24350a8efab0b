package render

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestDesiredObjectsClusterWideFirst (issue 28 item 4): the certificate Secret, the users'
// ConfigMap and the admission policy come before every shard's objects, so a shard the API
// server refuses (a claim's Deployment) cannot keep them from the cluster.
func TestDesiredObjectsClusterWideFirst(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "mine-team", Replicas: ptr.To[int32](1), Claim: "team/mine"}})
	objs, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u", AdmissionPolicy: true,
		TLS: &TLSInput{Cert: []byte("c"), Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	firstShardObject := -1
	seen := map[string]int{}
	for i, o := range objs {
		if o.GetLabels()[v1alpha1.ShardLabel] != "" && firstShardObject < 0 {
			firstShardObject = i
		}
		seen[o.GetKind()] = i
		if o.GetLabels()[v1alpha1.ShardLabel] == "" && firstShardObject >= 0 {
			t.Errorf("cluster-wide %s %s comes after shard objects", o.GetKind(), o.GetName())
		}
	}
	for _, k := range []string{"Secret", "ConfigMap", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Namespace"} {
		if i, ok := seen[k]; !ok || i >= firstShardObject {
			t.Errorf("%s at %d (present %v), the first shard object at %d", k, i, ok, firstShardObject)
		}
	}
}

// TestRenderDesiredIsolatesShards: a shard that cannot be rendered carries its error; the
// cluster-wide objects and the other shards are whole.
func TestRenderDesiredIsolatesShards(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "bad", Flavour: "nope"}, {Name: "good"}})
	d, err := RenderDesired(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u", AdmissionPolicy: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Shards) != 2 || d.Shards[0].Err == nil || len(d.Shards[0].Objects) != 0 || d.Shards[1].Err != nil || len(d.Shards[1].Objects) == 0 {
		t.Fatalf("shards %+v", d.Shards)
	}
	kinds := map[string]bool{}
	for _, o := range d.Cluster {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"Namespace", "ConfigMap", "ValidatingAdmissionPolicy", "ClusterRole"} {
		if !kinds[k] {
			t.Errorf("no cluster-wide %s", k)
		}
	}
	if _, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u"}); err == nil {
		t.Error("DesiredObjects hid the shard's error")
	}
}
