package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/listenersets"
	"github.com/shardgate/shardgate/pkg/routekinds"
	"github.com/shardgate/shardgate/pkg/vip"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from the current renderer")

// goldenCases cover every shape a Traefik router takes: each publishing, one and several
// replicas, a claimed shard, TLS before and after the first issuance, with and without the
// redirect, VIPs allocated and not yet, the canary, and Gateway API served.
func goldenCases() map[string]DesiredInput {
	edgeVIP := &VIPInput{
		Instances: []vip.Instance{{VIP: netip.MustParseAddr("192.0.2.1"), RouterID: 3, Home: "n1"},
			{VIP: netip.MustParseAddr("192.0.2.2"), RouterID: 4}},
		Nodes: []vip.Node{{Name: "n1", Address: netip.MustParseAddr("10.0.0.1")},
			{Name: "n2", Address: netip.MustParseAddr("10.0.0.2")}},
	}
	vipShard := v1alpha1.ShardSpec{Name: "edge", Publishing: v1alpha1.PublishVIP,
		VIP: &v1alpha1.VIPSettings{Pool: []string{"192.0.2.0/28"}, Count: 2, VRRP: v1alpha1.VRRPMulticast,
			AdvertInterval: &metav1.Duration{Duration: 500e6}}}
	waiting := v1alpha1.ShardSpec{Name: "waiting", Publishing: v1alpha1.PublishVIP, Replicas: ptr.To[int32](2),
		VIP: &v1alpha1.VIPSettings{Pool: []string{"192.0.2.16/28"}, Count: 1, Image: "example/vip:1"}}
	lb := v1alpha1.ShardSpec{Name: "lb", Publishing: v1alpha1.PublishLoadBalancer, Replicas: ptr.To[int32](3),
		Image: "registry.example/traefik:1", ImagePullPolicy: corev1.PullAlways, NodeSelector: map[string]string{"role": "ingress"},
		Tolerations: []corev1.Toleration{{Key: "ingress", Operator: corev1.TolerationOpExists}},
		Resources:   corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	rip := v1alpha1.ShardSpec{Name: "rip", Publishing: v1alpha1.PublishRoutedIP, Replicas: ptr.To[int32](2),
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "edge"}}}
	cert := &TLSInput{RedirectHTTP: true, Cert: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
		Key: []byte("-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n"), CA: []byte("ca")}
	return map[string]DesiredInput{
		"default-only": {RouteKinds: ingressOnly, ClusterDomain: "c1.z.test", TTL: 60, Shards: v1alpha1.ResolveShards(nil),
			ShardgateUser: "u"},
		"every-publishing": {RouteKinds: ingressOnly, ClusterDomain: "c1.z.test", TTL: 30, ShardgateUser: "system:shardgate",
			AdmissionPolicy: true, Canary: true, TLS: cert,
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{
				{Name: "default"},
				{Name: "np", Publishing: v1alpha1.PublishNodePort, Replicas: ptr.To[int32](2)},
				lb, rip,
				{Name: "mine-team", Replicas: ptr.To[int32](1), Claim: "team/mine"},
			})},
		"tls-before-issuance": {RouteKinds: ingressOnly, ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u", TLS: &TLSInput{},
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "np", Publishing: v1alpha1.PublishNodePort}})},
		// Every built-in route kind: the admission policy guards each, and the shards' listeners take
		// the Gateway API ones.
		"gateway-api": {RouteKinds: routekinds.Builtin(), ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u", TLS: cert,
			AdmissionPolicy: true, GatewayAPI: true, Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"},
				{Name: "np", Publishing: v1alpha1.PublishNodePort}})},
		// A tenant's ListenerSet merged into the default shard's Gateway, on a NodePort shard's
		// ports too, with the grant of its Secret.
		"listenersets": {RouteKinds: ingressOnly, ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u", TLS: cert,
			GatewayAPI: true, ListenerSets: true, Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"},
				{Name: "np", Publishing: v1alpha1.PublishNodePort}}),
			Listeners: map[string][]listenersets.Listener{
				"default": {{Name: "ls-1", Namespace: "team", Hostname: "app.team.example", HTTPS: true, Secrets: []string{"app-tls"}},
					{Name: "ls-2", Namespace: "team", Hostname: "app.team.example"}},
				"np": {{Name: "ls-3", Namespace: "other", Hostname: "other.example"}}},
			Grants: map[string][]string{"team": {"app-tls"}}},
		"vip": {RouteKinds: ingressOnly, ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u", Canary: true, TLS: cert,
			Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{vipShard, waiting}), VIP: map[string]*VIPInput{"edge": edgeVIP}},
	}
}

// TestRenderedObjectsAreUnchanged compares everything RenderDesired renders with what this
// renderer rendered when the files were written: a Traefik router whose objects change is
// restarted by the upgrade that changes them, so a refactoring of the renderer must leave every
// byte (and the applied hash that says so) as it was. A change that means to alter the routers
// rewrites the files with -update-golden and says why in its commit.
func TestRenderedObjectsAreUnchanged(t *testing.T) {
	for name, in := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			objs, err := DesiredObjects(in)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			for _, o := range objs {
				b, err := json.MarshalIndent(o.Object, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got.Write(b)
				got.WriteString("\n")
			}
			path := filepath.Join("testdata", "golden", name+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("rendered objects differ from %s (a router would restart on upgrade); got:\n%s", path, got.String())
			}
		})
	}
}
