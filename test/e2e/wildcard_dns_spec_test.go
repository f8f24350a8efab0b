package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// WildcardDNSSpecInput is what WildcardDNSSpec runs on: a seed with external-dns and BIND, three
// user clusters with simulated nodes, and the seed controller running with --dns-zone=DNS.Zone.
type WildcardDNSSpecInput struct {
	Seed       *framework.ControlPlane
	Users      []*framework.ControlPlane
	DNS        *framework.DNSServer
	Controller *framework.Controller
}

// WildcardDNSSpec proves the product's core promise end to end: every selected user cluster gets
// *.<clusterid>.<zone> pointing at exactly its ready ingress nodes, kept true as nodes change,
// through outages and credential rotation, removed with the cluster, and bad input is reported
// without a crash or a lost record.
func WildcardDNSSpec(ctx context.Context, t *testing.T, inputGetter func() WildcardDNSSpecInput) {
	in := inputGetter()
	seed, zone, dnsSrv := in.Seed, in.DNS.Zone, in.DNS
	u1, u2, u3 := in.Users[0], in.Users[1], in.Users[2]
	sel := map[string]string{"ingress": "shardgate"}
	// NodePort publishing: the cluster's names follow all its ready schedulable nodes (HostNetwork
	// shards follow their router pods; ShardsSpec covers those).
	createProfile(ctx, t, seed, "default", sel, v1alpha1.DNSSettings{},
		v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})

	addNodes(ctx, t, u1, nodeSpec("n1", "127.0.11.1"), nodeSpec("n2", "127.0.11.2"), nodeSpec("n3", "127.0.11.3"))
	addNodes(ctx, t, u2, nodeSpec("n1", "127.0.12.1"), nodeSpec("n2", "127.0.12.2"))
	addNodes(ctx, t, u3, nodeSpec("n1", "127.0.13.1"), nodeSpec("n2", "127.0.13.2"))
	registerCAPICluster(ctx, t, seed, "default", "c1", u1, sel, nil)
	registerCAPICluster(ctx, t, seed, "default", "c2", u2, sel, nil)
	registerKubeconfigSecret(ctx, t, seed, "default", "third", "c3", u3, sel)

	answer := func(t *testing.T, id string, ips ...string) {
		t.Helper()
		waitAnswer(ctx, t, dnsSrv, fmt.Sprintf("anything.%s.%s", id, zone), framework.AnswerIs(ips...))
		waitAnswer(ctx, t, dnsSrv, fmt.Sprintf("%s.%s", id, zone), framework.AnswerIs(ips...))
	}

	t.Run("each cluster's wildcard answers with exactly its ready nodes", func(t *testing.T) {
		answer(t, "c1", "127.0.11.1", "127.0.11.2", "127.0.11.3")
		answer(t, "c2", "127.0.12.1", "127.0.12.2")
		answer(t, "c3", "127.0.13.1", "127.0.13.2")
		waitCondition(ctx, t, seed, key("c1"), v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable)
		waitCondition(ctx, t, seed, key("c1"), v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
		ci := getCI(ctx, t, seed, key("c1"))
		if ci.Status.Domain != "c1."+zone || ci.Status.ReadyNodeCount != 3 || ci.Status.ClusterID != "c1" {
			t.Fatalf("status: domain %q readyNodes %d id %q", ci.Status.Domain, ci.Status.ReadyNodeCount, ci.Status.ClusterID)
		}
	})

	t.Run("nodes that stop being ready leave the answer, new ones join", func(t *testing.T) {
		must(t, u1.SetNodeReady(ctx, "n1", false))
		answer(t, "c1", "127.0.11.2", "127.0.11.3")
		must(t, u1.CordonNode(ctx, "n2", true))
		answer(t, "c1", "127.0.11.3")
		addNodes(ctx, t, u1, nodeSpec("n4", "127.0.11.4"))
		answer(t, "c1", "127.0.11.3", "127.0.11.4")
		must(t, u1.DeleteNode(ctx, "n3"))
		answer(t, "c1", "127.0.11.4")
		must(t, u1.SetNodeReady(ctx, "n1", true))
		must(t, u1.CordonNode(ctx, "n2", false))
		answer(t, "c1", "127.0.11.1", "127.0.11.2", "127.0.11.4")
		// Other clusters were untouched.
		answer(t, "c2", "127.0.12.1", "127.0.12.2")
	})

	t.Run("no ready node keeps the last targets and says so", func(t *testing.T) {
		must(t, u3.SetNodeReady(ctx, "n1", false))
		answer(t, "c3", "127.0.13.2")
		must(t, u3.SetNodeReady(ctx, "n2", false))
		waitCondition(ctx, t, seed, key("third"), v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets)
		answer(t, "c3", "127.0.13.2")
		must(t, u3.SetNodeReady(ctx, "n1", true))
		answer(t, "c3", "127.0.13.1")
	})

	t.Run("an unreachable cluster keeps its records and recovers by itself", func(t *testing.T) {
		// The chart's alerts read the controller's real /metrics: unreachable is true while the
		// API server is stopped, and false before and after.
		unreachable := alertCheck{alert: "ShardgateClusterUnreachable", cluster: "default/c2"}
		stale := alertCheck{alert: "ShardgateClusterRecordsStale", cluster: "default/c2"}
		for _, a := range []*alertCheck{&unreachable, &stale} {
			a.scrape(t, in.Controller)
		}
		must(t, u2.StopAPIServer())
		waitCondition(ctx, t, seed, key("c2"), v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable)
		waitCondition(ctx, t, seed, key("c2"), v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonStaleRecordsKept)
		for _, a := range []*alertCheck{&unreachable, &stale} {
			a.scrape(t, in.Controller)
		}
		// The doctor names the cause before its effect.
		if d := doctor(ctx, t, seed, "default/c2", "--dns-server", dnsSrv.Addr); causesOf(d) !=
			"ClusterReachable=False/Unreachable → ShardgateClusterUnreachable; "+
				"DNSPublished=True/ClusterUnreachableRecordsKept → ShardgateClusterRecordsStale" {
			t.Errorf("doctor default/c2: %s", causesOf(d))
		} else {
			t.Logf("doctor default/c2: %s", causesOf(d))
		}
		// Others keep converging meanwhile.
		must(t, u1.SetNodeReady(ctx, "n4", false))
		answer(t, "c1", "127.0.11.1", "127.0.11.2")
		answer(t, "c2", "127.0.12.1", "127.0.12.2")
		must(t, u2.StartAPIServer(ctx))
		waitCondition(ctx, t, seed, key("c2"), v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
		for _, a := range []*alertCheck{&unreachable, &stale} {
			a.scrape(t, in.Controller)
		}
		unreachable.expect(t, nil, []sample{{Labels: `{cluster="default/c2"}`, Value: 1}}, nil)
		stale.expect(t, nil, []sample{{Labels: `{cluster="default/c2"}`, Value: 1}}, nil)
		must(t, u2.CordonNode(ctx, "n1", true))
		answer(t, "c2", "127.0.12.2")
	})

	t.Run("a rotated kubeconfig is picked up and the cluster keeps converging", func(t *testing.T) {
		kc, err := u1.Kubeconfig("shardgate-c1-rotated", "system:masters")
		must(t, err)
		putCAPIKubeconfig(ctx, t, seed, "default", "c1", kc)
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			return in.Controller.LogContains("kubeconfig changed, re-engaging"), "controller did not re-engage"
		})
		must(t, u1.SetNodeReady(ctx, "n4", true))
		answer(t, "c1", "127.0.11.1", "127.0.11.2", "127.0.11.4")
	})

	t.Run("bad input gets a condition with a clear reason, never a crash", func(t *testing.T) {
		registerCAPICluster(ctx, t, seed, "default", "badid", u1, sel, map[string]string{v1alpha1.ClusterIDAnnotation: "Not_A_Label"})
		registerCAPICluster(ctx, t, seed, "default", "dup", u1, sel, map[string]string{v1alpha1.ClusterIDAnnotation: "c2"})
		registerCAPICluster(ctx, t, seed, "default", "nosecret", nil, sel, nil)
		registerCAPICluster(ctx, t, seed, "default", "garbage", nil, sel, nil)
		putCAPIKubeconfig(ctx, t, seed, "default", "garbage", []byte("super-secret-token-value: {{not yaml"))
		// A zone the CRD's schema can refuse never gets in.
		bad := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "badzone"}, Spec: v1alpha1.IngressProfileSpec{DNS: v1alpha1.DNSSettings{Zone: "bad_zone..test"}}}
		if err := seed.Client.Create(ctx, bad); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.dns.zone") {
			t.Fatalf("profile with zone bad_zone..test: %v, want refused at admission naming spec.dns.zone", err)
		}

		waitCondition(ctx, t, seed, key("badid"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonInvalidClusterID)
		waitCondition(ctx, t, seed, key("dup"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict)
		waitCondition(ctx, t, seed, key("nosecret"), v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonKubeconfigMissing)
		waitCondition(ctx, t, seed, key("garbage"), v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonKubeconfigInvalid)
		ci := getCI(ctx, t, seed, key("garbage"))
		for _, c := range ci.Status.Conditions {
			if strings.Contains(c.Message, "super-secret") {
				t.Fatalf("secret content leaked into status: %q", c.Message)
			}
		}
		if in.Controller.LogContains("super-secret") {
			t.Fatal("secret content leaked into the controller log")
		}
		// The older cluster keeps its ID and its records.
		answer(t, "c2", "127.0.12.2")
		if !in.Controller.Running() {
			t.Fatal("controller exited")
		}
	})

	t.Run("a deleted cluster's names disappear, others stay", func(t *testing.T) {
		// Cluster API deletes a Cluster through its finalizer: Shardgate sees it being deleted.
		must(t, seed.Client.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c1"}}))
		defer removeCAPIFinalizer(ctx, t, seed, key("c1"))
		waitAnswer(ctx, t, dnsSrv, "anything.c1."+zone, framework.AnswerNXDomain)
		waitAnswer(ctx, t, dnsSrv, "c1."+zone, framework.AnswerNXDomain)
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			err := seed.Client.Get(ctx, key("c1"), &v1alpha1.ClusterIngress{})
			return err != nil, "ClusterIngress c1 still exists"
		})
		answer(t, "c2", "127.0.12.2")
		answer(t, "c3", "127.0.13.1")
	})
}

func TestWildcardDNS(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 3, SimulatedNodes: true, DNS: true})
	ctrl := framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone)
	WildcardDNSSpec(ctx, t, func() WildcardDNSSpecInput {
		return WildcardDNSSpecInput{Seed: env.Seed, Users: env.Users, DNS: env.DNS, Controller: ctrl}
	})
}

func nodeSpec(name, ip string) framework.NodeSpec {
	return framework.NodeSpec{Name: name, InternalIP: ip}
}

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: name}
}

func getCI(ctx context.Context, t testing.TB, seed *framework.ControlPlane, k types.NamespacedName) *v1alpha1.ClusterIngress {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	must(t, seed.Client.Get(ctx, k, ci))
	return ci
}

func waitCondition(ctx context.Context, t *testing.T, seed *framework.ControlPlane, k types.NamespacedName, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(ctx, t, 45*time.Second, func() (bool, string) {
		ci := &v1alpha1.ClusterIngress{}
		if err := seed.Client.Get(ctx, k, ci); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ci.Status.Conditions, typ)
		if c == nil {
			return false, fmt.Sprintf("%s: no %s condition; conditions %+v", k, typ, ci.Status.Conditions)
		}
		return c.Status == status && c.Reason == reason, fmt.Sprintf("%s: %s=%s/%s (%s), want %s/%s", k, typ, c.Status, c.Reason, c.Message, status, reason)
	})
}
