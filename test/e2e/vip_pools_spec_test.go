package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// TestVIPPoolConditions: the operator gives clusters their VIP pools, L2 domains and router IDs
// through profiles, and the seed allocates across them: an exhausted pool, a node reporting
// another cluster's VIP and a cluster's own VIP on its own node each give a clear VIPsAvailable
// reason and message, the VIPs held stay where they are, and a source annotation naming a domain
// of its own is not read (its SourceAvailable says so). (Simulated nodes: no keepalived runs, so
// allocated VIPs are reported not held.)
func TestVIPPoolConditions(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 3, SimulatedNodes: true})
	seed := env.Seed
	framework.StartController(t, seed, "--dns-zone=pools.test")
	vipProfile := func(name string, vip v1alpha1.ClusterVIPSettings) {
		must(t, seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.IngressProfileSpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"vips": name}},
			Shards: []v1alpha1.ShardSpec{{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort},
				{Name: "edge", Publishing: v1alpha1.PublishVIP, VIP: &v1alpha1.VIPSettings{Count: 2}}},
			VIP: vip}}))
	}
	vipProfile("shared", v1alpha1.ClusterVIPSettings{Pool: []string{"10.77.0.0/29"}})
	vipProfile("rack", v1alpha1.ClusterVIPSettings{Pool: []string{"10.78.0.0/31"}, L2Domain: "rack-c",
		RouterIDs: &v1alpha1.RouterIDRange{First: 20, Last: 29}})
	register := func(name string, u *framework.ControlPlane, profile string) {
		registerKubeconfigSecret(ctx, t, seed, "default", name, name, u, map[string]string{"vips": profile})
	}
	// vipsOf is the cluster's VIPs (address#routerID) and VIPsAvailable reason and message.
	vipsOf := func(name string) (string, string, string) {
		ci := &v1alpha1.ClusterIngress{}
		if err := seed.Client.Get(ctx, key(name), ci); err != nil {
			return "", "", err.Error()
		}
		var as []string
		for _, s := range ci.Status.VIPs {
			for _, a := range s.Addresses {
				as = append(as, fmt.Sprintf("%s#%d", a.Address, a.RouterID))
			}
		}
		c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionVIPsAvailable)
		if c == nil {
			return strings.Join(as, ","), "", ""
		}
		return strings.Join(as, ","), c.Reason, c.Message
	}
	want := func(name, vips, reason, inMessage string) {
		t.Helper()
		eventually(ctx, t, time.Minute, func() (bool, string) {
			v, r, m := vipsOf(name)
			var nodes []string
			for _, u := range env.Users {
				l := &corev1.NodeList{}
				if u.Client.List(ctx, l) == nil {
					for _, n := range l.Items {
						nodes = append(nodes, fmt.Sprintf("%s/%s=%v", u.Name, n.Name, n.Status.Addresses))
					}
				}
			}
			return v == vips && r == reason && strings.Contains(m, inMessage), fmt.Sprintf("%s: VIPs %q, %s: %s (nodes %v)", name, v, r, m, nodes)
		})
	}

	register("a", env.Users[0], "shared")
	want("a", "10.77.0.1#1,10.77.0.2#2", v1alpha1.ReasonVIPsNotHeld, "no node holds 10.77.0.1")
	register("b", env.Users[1], "shared")
	want("b", "10.77.0.3#3,10.77.0.4#4", v1alpha1.ReasonVIPsNotHeld, "no node holds 10.77.0.3")

	// b's owner writes a's VIP into a node's addresses: a keeps it; b, whose node it is, is told
	// (in the message: its own VIPs, held by no node here, are the graver reason).
	addNodes(ctx, t, env.Users[1], nodeSpec("b1", "10.77.0.1"))
	want("b", "10.77.0.3#3,10.77.0.4#4", v1alpha1.ReasonVIPsNotHeld, "node b1 of default/b reports 10.77.0.1, a VIP of default/a")

	// c's profile puts it in an L2 domain of its own with router IDs 20-29.
	addNodes(ctx, t, env.Users[2], nodeSpec("c1", "10.78.0.1"))
	register("c", env.Users[2], "rack")
	want("c", "10.78.0.0#20", v1alpha1.ReasonVIPsNotHeld, "wants 2 VIPs, got 1 (in use: 10.78.0.1 by node c1 of default/c)")
	// c's own VIP on a node of c (a cloud provider reporting every NIC address) changes nothing.
	addNodes(ctx, t, env.Users[2], nodeSpec("c2", "10.78.0.0"))
	want("c", "10.78.0.0#20", v1alpha1.ReasonVIPsNotHeld, "wants 2 VIPs, got 1 (in use: 10.78.0.1 by node c1 of default/c)")

	// a's source names a domain and pool of its own: not read, and a is told why.
	s := &corev1.Secret{}
	must(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, s))
	s.Annotations[v1alpha1.L2DomainAnnotation], s.Annotations[v1alpha1.VIPPoolAnnotation] = "mine", "10.77.0.0/30"
	must(t, seed.Client.Update(ctx, s))
	eventually(ctx, t, time.Minute, func() (bool, string) {
		ci := &v1alpha1.ClusterIngress{}
		if err := seed.Client.Get(ctx, key("a"), ci); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionSourceAvailable)
		return c != nil && strings.Contains(c.Message, v1alpha1.L2DomainAnnotation+" are not read") && ci.Spec.VIP.L2Domain == "",
			fmt.Sprintf("a: domain %q, SourceAvailable %+v", ci.Spec.VIP.L2Domain, c)
	})

	// Nothing of that disturbed a.
	if v, r, _ := vipsOf("a"); v != "10.77.0.1#1,10.77.0.2#2" || r != v1alpha1.ReasonVIPsNotHeld {
		t.Fatalf("a disturbed: %s %s", v, r)
	}
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(ctx, key("a"), ci))
	if r := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready with VIPs nobody holds: %+v", r)
	}
}
