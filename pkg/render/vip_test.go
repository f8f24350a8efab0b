package render

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

func TestTraefikVIPShard(t *testing.T) {
	s := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishVIP,
		VIP: &v1alpha1.VIPSettings{Pool: []string{"192.0.2.0/28"}, Count: 2, Image: "example/vip:1"}}})[0]
	in := &VIPInput{
		Instances: []vip.Instance{{VIP: netip.MustParseAddr("192.0.2.1"), RouterID: 3}, {VIP: netip.MustParseAddr("192.0.2.2"), RouterID: 4}},
		Nodes:     []vip.Node{{Name: "n2", Address: netip.MustParseAddr("10.0.0.2")}, {Name: "n1", Address: netip.MustParseAddr("10.0.0.1")}},
	}
	objs, err := RenderShard(Traefik{}, RenderInput{Domain: "edge.c1.example.test", Shard: s, DNSTTL: 60, VIP: in})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string]bool{}
	byKind := map[string][]int{}
	for i, o := range objs {
		if m[o.GetKind()] == nil {
			m[o.GetKind()] = map[string]bool{}
		}
		m[o.GetKind()][o.GetName()] = true
		byKind[o.GetKind()] = append(byKind[o.GetKind()], i)
	}
	if m["Service"] != nil {
		t.Error("a VIP shard needs no Service")
	}
	d := as[appsv1.Deployment](t, objs[byKind["Deployment"][0]])
	pod := d.Spec.Template.Spec
	if !pod.HostNetwork || len(pod.Containers) != 3 || !slices.Contains(pod.Containers[0].Args, "--entryPoints.web.address=:80") {
		t.Fatalf("VIP routers must bind the node's ports with the VIP agent and keepalived beside them: %+v", pod)
	}
	// The agent holds the token and no capability, as a non-root user; keepalived holds
	// NET_ADMIN and NET_RAW, as root (a non-root process gets no added capability), and no token.
	a, k := pod.Containers[1], pod.Containers[2]
	for _, c := range []corev1.Container{a, k} {
		sc := c.SecurityContext
		if c.Image != "example/vip:1" || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile == nil {
			t.Errorf("%s container: %+v %+v", c.Name, c, sc)
		}
	}
	// Each writes its own directory and reads the other's: neither can replace what the other
	// says (a compromised keepalived forging the agent's configuration, or blocking its writes).
	for _, tc := range []struct {
		c        corev1.Container
		writable string
	}{{a, "/run/keepalived"}, {k, "/run/keepalived-supervisor"}} {
		mounts := map[string]bool{}
		for _, m := range tc.c.VolumeMounts {
			if m.MountPath == "/run/keepalived" || m.MountPath == "/run/keepalived-supervisor" {
				mounts[m.MountPath] = !m.ReadOnly
			}
		}
		if len(mounts) != 2 || !mounts[tc.writable] {
			t.Errorf("%s: directories writable %v, want both mounted and only %s writable", tc.c.Name, mounts, tc.writable)
		}
	}
	for _, v := range pod.Volumes {
		if e := v.EmptyDir; e != nil && (e.Medium != corev1.StorageMediumMemory || e.SizeLimit == nil || e.SizeLimit.Value() > 8<<20) {
			t.Errorf("volume %s: in memory and bounded, as %+v", v.Name, e)
		}
	}
	if sc := a.SecurityContext; a.Name != "vip-agent" || len(sc.Capabilities.Add) > 0 || !*sc.RunAsNonRoot || *sc.RunAsUser == 0 {
		t.Errorf("the VIP agent must run as a user without capabilities: %+v", sc)
	}
	if sc := k.SecurityContext; k.Name != "keepalived" ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) || k.Args[0] != "keepalived" {
		t.Errorf("keepalived container: %+v %+v", k, sc)
	}
	for _, want := range []string{"--shard=edge", "--node-name=$(NODE_NAME)", "--node-ip=$(NODE_IP)", "--router-url=http://127.0.0.1:9000/ping",
		"--configmap=router-edge-vip"} {
		if !slices.Contains(a.Args, want) {
			t.Errorf("agent args lack %s: %v", want, a.Args)
		}
	}
	var cm *corev1.ConfigMap
	for _, i := range byKind["ConfigMap"] {
		if objs[i].GetName() == VIPConfigName("edge") {
			cm = as[corev1.ConfigMap](t, objs[i])
		}
	}
	if cm == nil {
		t.Fatal("no keepalived ConfigMap")
	}
	conf := cm.Data["keepalived.conf"]
	for _, want := range []string{"virtual_router_id 3", "192.0.2.1/32", "192.0.2.2/32", "@n1  unicast_src_ip 10.0.0.1", "@n2  priority 200", "advert_int 0.2"} {
		if !strings.Contains(conf, want) {
			t.Errorf("keepalived.conf lacks %q:\n%s", want, conf)
		}
	}
	// The agent's health file is the agent's alone: keepalived (root, in another container)
	// writing it first left a file the agent could not replace in the sticky run directory, and
	// every node stayed "unhealthy" (its router hung, nothing failed over).
	// And the health file is where pods of the one-container image (0.1.0), which read this
	// ConfigMap too while a rollout mixes both, have it (keepalived drops a tracked file whose
	// directory is missing, and with it the router's health).
	if strings.Contains(conf, "init_file") || !strings.Contains(conf, `file "/run/keepalived/router-health"`) ||
		!strings.Contains(conf, `file "/run/keepalived-supervisor/agent-alive"`) {
		t.Errorf("keepalived.conf must track the agent's health file without writing it:\n%s", conf)
	}
	if cm.Data["vips"] != "192.0.2.1 3\n192.0.2.2 4\n" {
		t.Errorf("vips: %q", cm.Data["vips"])
	}
	// The agent reads its configuration through the API: no volume for it (the kubelet's
	// refresh lagged a minute behind), and a role that may read ConfigMaps and write Leases only.
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			t.Errorf("the agent's configuration is mounted as a volume: %+v", v)
		}
	}
	for _, i := range byKind["ClusterRole"] {
		if objs[i].GetName() != vipClusterRole {
			continue
		}
		role := as[rbacv1.ClusterRole](t, objs[i])
		want := "[{[get list watch] [] [configmaps] [] []} {[get create update] [coordination.k8s.io] [leases] [] []}]"
		if got := fmt.Sprint(role.Rules); got != want {
			t.Errorf("agent role: %s, want %s", got, want)
		}
	}
	rb := as[rbacv1.RoleBinding](t, objs[byKind["RoleBinding"][0]])
	if rb.Namespace != names.Namespace || rb.RoleRef.Name != vipClusterRole || rb.Subjects[0].Name != "router-edge" {
		t.Errorf("lease binding: %+v", rb)
	}

	// Before VIPs are allocated or a router runs, the agent is told to wait.
	objs, err = RenderShard(Traefik{}, RenderInput{Domain: "edge.c1.example.test", Shard: s, DNSTTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == VIPConfigName("edge") {
			if c := as[corev1.ConfigMap](t, o); strings.Contains(c.Data["keepalived.conf"], "vrrp_instance") {
				t.Errorf("configuration without VIPs: %s", c.Data["keepalived.conf"])
			}
		}
	}
}

// TestVIPImageNamesItsContract (attacker's review): the two-container pod needs an image whose
// binary has the keepalived subcommand; a new tag, so a node that cached 0.1.0 (IfNotPresent)
// never runs the other contract under the same name.
func TestVIPImageNamesItsContract(t *testing.T) {
	if VIPAgentImage == "ghcr.io/shardgate/vip-agent:0.1.0" {
		t.Errorf("the default VIP image %s names both the one-container and the two-container contract", VIPAgentImage)
	}
}
