package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/test/framework"
)

// TestKubermaticSource: a Kubermatic seed without Cluster API. A kubermatic.k8c.io Cluster
// (cluster-scoped) with its control plane in cluster-<name> and internal-admin-kubeconfig there
// gets a ClusterIngress in that namespace; it is engaged only once Kubermatic reports its API
// server up, then gets its wildcard DNS like any other source; while paused nothing about it is
// decided (a profile no longer selecting it removes nothing until it is unpaused).
func TestKubermaticSource(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, SimulatedNodes: true, DNS: true})
	seed, u, zone := env.Seed, env.Users[0], env.DNS.Zone
	root, err := framework.RepoRoot()
	must(t, err)
	must(t, seed.InstallCRDs(filepath.Join(root, "test", "crds", "kubermatic")))
	framework.StartController(t, seed, "--dns-zone="+zone)
	sel := map[string]string{"kkp": "yes"}
	createProfile(ctx, t, seed, "kkp", sel, v1alpha1.DNSSettings{TTL: 5}, v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})
	addNodes(ctx, t, u, nodeSpec("n1", "127.0.21.1"), nodeSpec("n2", "127.0.21.2"))

	// What Kubermatic creates: the cluster's namespace with the in-seed admin kubeconfig, and the
	// Cluster, its API server not up yet.
	ns := "cluster-kkp1"
	must(t, seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	kc, err := u.Kubeconfig("kubermatic-admin", "system:masters")
	must(t, err)
	must(t, seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sources.KubermaticKubeconfigSecret},
		Data: map[string][]byte{"kubeconfig": kc}}))
	kkp := &sources.KubermaticCluster{ObjectMeta: metav1.ObjectMeta{Name: "kkp1", Labels: sel}}
	must(t, seed.Client.Create(ctx, kkp))
	setHealth := func(h string) {
		kkp.Status = sources.KubermaticClusterStatus{NamespaceName: ns, ExtendedHealth: sources.KubermaticClusterHealth{Apiserver: h}}
		must(t, seed.Client.Status().Update(ctx, kkp))
	}
	setHealth("HealthStatusProvisioning")
	k := types.NamespacedName{Namespace: ns, Name: "kkp1"}

	t.Run("registered in its namespace, engaged only once its API server is up", func(t *testing.T) {
		waitCondition(ctx, t, seed, k, v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonControlPlaneNotReady)
		ci := getCI(ctx, t, seed, k)
		if ci.Spec.ClusterRef.Kind != v1alpha1.SourceKindKubermatic || ci.Spec.ClusterRef.Name != "kkp1" || ci.Spec.ClusterID != "kkp1" {
			t.Fatalf("spec %+v", ci.Spec.ClusterRef)
		}
		setHealth(sources.KubermaticHealthUp)
		waitAnswer(ctx, t, env.DNS, "anything.kkp1."+zone, framework.AnswerIs("127.0.21.1", "127.0.21.2"))
		waitCondition(ctx, t, seed, k, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
	})

	t.Run("the wildcard follows the nodes", func(t *testing.T) {
		must(t, u.SetNodeReady(ctx, "n1", false))
		waitAnswer(ctx, t, env.DNS, "anything.kkp1."+zone, framework.AnswerIs("127.0.21.2"))
	})

	t.Run("paused, nothing is decided; unpaused, a profile no longer selecting it removes it", func(t *testing.T) {
		must(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(kkp), kkp))
		kkp.Spec.Pause = true
		kkp.Labels = map[string]string{"kkp": "no"}
		must(t, seed.Client.Update(ctx, kkp))
		time.Sleep(3 * time.Second) // the lifecycle controller sees the change within this
		if err := seed.Client.Get(ctx, k, &v1alpha1.ClusterIngress{}); err != nil {
			t.Fatalf("paused cluster's ClusterIngress: %v", err)
		}
		waitAnswer(ctx, t, env.DNS, "anything.kkp1."+zone, framework.AnswerIs("127.0.21.2"))
		kkp.Spec.Pause = false
		must(t, seed.Client.Update(ctx, kkp))
		eventually(ctx, t, time.Minute, func() (bool, string) {
			err := seed.Client.Get(ctx, k, &v1alpha1.ClusterIngress{})
			return apierrors.IsNotFound(err), fmt.Sprintf("ClusterIngress: %v", err)
		})
		waitAnswer(ctx, t, env.DNS, "anything.kkp1."+zone, framework.AnswerNXDomain)
	})
}
