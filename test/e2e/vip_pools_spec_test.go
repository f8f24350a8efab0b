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

// TestVIPPoolConditions: clusters register with their own VIP pools (source annotation) and the
// seed allocates across them: an overlapping pool, an exhausted pool and an address that turns
// out to be a node's each give a clear VIPsAvailable reason and message, and the other clusters'
// VIPs stay as they were. (Simulated nodes: no keepalived runs, so allocated VIPs are reported not held.)
func TestVIPPoolConditions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 3, SimulatedNodes: true})
	seed := env.Seed
	framework.StartController(t, seed, "--dns-zone=pools.test")
	createProfile(ctx, t, seed, "vips", nil, v1alpha1.DNSSettings{},
		v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort},
		v1alpha1.ShardSpec{Name: "edge", Publishing: v1alpha1.PublishVIP, VIP: &v1alpha1.VIPSettings{Count: 2}})
	register := func(name string, u *framework.ControlPlane, pool string) {
		registerKubeconfigSecret(ctx, t, seed, "default", name, name, u, nil)
		s := &corev1.Secret{}
		must(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, s))
		s.Annotations[v1alpha1.VIPPoolAnnotation] = pool
		must(t, seed.Client.Update(ctx, s))
	}
	// vipsOf is the cluster's VIPs and VIPsAvailable reason.
	vipsOf := func(name string) (string, string, string) {
		ci := &v1alpha1.ClusterIngress{}
		if err := seed.Client.Get(ctx, key(name), ci); err != nil {
			return "", "", err.Error()
		}
		var as []string
		for _, s := range ci.Status.VIPs {
			for _, a := range s.Addresses {
				as = append(as, a.Address)
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

	register("a", env.Users[0], "10.77.0.0/30")
	want("a", "10.77.0.1,10.77.0.2", v1alpha1.ReasonVIPsNotHeld, "no node holds 10.77.0.1")

	register("b", env.Users[1], "10.77.0.2-10.77.0.5")
	want("b", "", v1alpha1.ReasonPoolOverlap, "overlaps the pool of default/a")

	addNodes(ctx, t, env.Users[2], nodeSpec("c1", "10.78.0.1"))
	register("c", env.Users[2], "10.78.0.0/31")
	want("c", "10.78.0.0", v1alpha1.ReasonPoolExhausted, "wants 2 VIPs, got 1 (in use: 10.78.0.1 by node c1 of default/c)")

	// c's VIP turns out to be the address of a node that joins: given up (AddressInUse when it
	// happens), and from then on the pool is exhausted, saying which nodes have its addresses.
	addNodes(ctx, t, env.Users[2], nodeSpec("c2", "10.78.0.0"))
	want("c", "", v1alpha1.ReasonPoolExhausted, "10.78.0.0 by node c2 of default/c, 10.78.0.1 by node c1 of default/c")

	// Nothing of that disturbed a.
	if v, r, _ := vipsOf("a"); v != "10.77.0.1,10.77.0.2" || r != v1alpha1.ReasonVIPsNotHeld {
		t.Fatalf("a disturbed: %s %s", v, r)
	}
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(ctx, key("a"), ci))
	if r := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready with VIPs nobody holds: %+v", r)
	}
}
