package engagement

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func kubeconfig(t *testing.T, tokenFile string) []byte {
	t.Helper()
	kc, err := framework.KubeconfigFor("https://127.0.0.1:6443", nil, "token")
	if err != nil {
		t.Fatal(err)
	}
	if tokenFile != "" {
		return []byte(strings.Replace(string(kc), "token: token", "tokenFile: "+tokenFile, 1))
	}
	return kc
}

func clusterIngress(t *testing.T, c client.Client, ns, name, kind string) types.NamespacedName {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ClusterIngressSpec{ClusterRef: v1alpha1.ClusterReference{Kind: kind, Name: name}, Profile: "p", ClusterID: name}}
	if err := c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(ci)
}

func secret(t *testing.T, c client.Client, ns, name string, kc []byte) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}}); err != nil {
		t.Fatal(err)
	}
}

func blocked(t *testing.T, f *clusteraccess.Fake, key types.NamespacedName, reason, contains string) {
	t.Helper()
	st, ok := f.Blocked(key)
	if !ok || st.Reason != reason || !strings.Contains(st.Message, contains) {
		t.Fatalf("%s: blocked %v %+v; want %s mentioning %q", key, ok, st, reason, contains)
	}
}

func TestEngagement(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	f := clusteraccess.NewFake()
	capi := sources.NewClusterAPI(nil, logr.Discard())
	r := &Reconciler{Client: seed.Client, KubeconfigSecrets: seed.Client, UnwatchedSecrets: seed.Client,
		Sources: sources.Registry{capi, sources.NewKubeconfigSecrets([]string{ns})}, Resync: time.Minute, Registry: f}

	good := clusterIngress(t, seed.Client, ns, "good", v1alpha1.SourceKindSecret)
	secret(t, seed.Client, ns, "good", kubeconfig(t, ""))
	controllertest.Reconcile(t, r, good, 1)
	if _, ok := f.Engaged[good]; !ok {
		t.Fatal("a valid kubeconfig was not engaged")
	}

	missing := clusterIngress(t, seed.Client, ns, "missing", v1alpha1.SourceKindSecret)
	controllertest.Reconcile(t, r, missing, 1)
	blocked(t, f, missing, v1alpha1.ReasonKubeconfigMissing, "not found")

	bad := clusterIngress(t, seed.Client, ns, "bad", v1alpha1.SourceKindSecret)
	secret(t, seed.Client, ns, "bad", kubeconfig(t, "/var/run/secrets/kubernetes.io/serviceaccount/token"))
	controllertest.Reconcile(t, r, bad, 1)
	blocked(t, f, bad, v1alpha1.ReasonKubeconfigInvalid, "user.tokenFile")
	if st, _ := f.Blocked(bad); strings.Contains(st.Message, "/var/run") {
		t.Fatalf("the message repeats the kubeconfig: %q", st.Message)
	}

	// Cluster API: blocked until it is found; then the <name>-kubeconfig Secret is read by name
	// and the cluster re-read every Resync.
	capiKey := clusterIngress(t, seed.Client, ns, "capi", v1alpha1.SourceKindCluster)
	controllertest.Reconcile(t, r, capiKey, 1)
	blocked(t, f, capiKey, v1alpha1.ReasonKubeconfigMissing, "Cluster API has not been found")
	capi.Discovery().Found()
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "capi"}, Spec: clusterv1.ClusterSpec{Paused: ptr.To(false)}}
	if err := seed.Client.Create(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, capiKey, 1)
	blocked(t, f, capiKey, v1alpha1.ReasonControlPlaneNotReady, "not initialized")
	cl.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if err := seed.Client.Status().Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	if err := seed.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "capi-kubeconfig"},
		Data: map[string][]byte{"value": kubeconfig(t, "")}}); err != nil {
		t.Fatal(err)
	}
	if res := controllertest.Reconcile(t, r, capiKey, 1); res.RequeueAfter != time.Minute {
		t.Fatalf("requeue after %s, want the resync period", res.RequeueAfter)
	}
	if _, ok := f.Engaged[capiKey]; !ok {
		t.Fatal("the Cluster API kubeconfig was not engaged")
	}

	// Deleted: disengaged once no cleanup finalizer needs the cluster.
	ci := &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(context.Background(), good, ci); err != nil {
		t.Fatal(err)
	}
	ci.Finalizers = []string{v1alpha1.UserClusterCleanupFinalizer}
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	if err := seed.Client.Delete(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, good, 1)
	if _, ok := f.Engaged[good]; !ok {
		t.Fatal("disengaged while a cleanup still needs the cluster")
	}
	ci = &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(context.Background(), good, ci); err != nil {
		t.Fatal(err)
	}
	ci.Finalizers = nil
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, good, 1)
	if _, ok := f.Engaged[good]; ok {
		t.Fatal("still engaged after the ClusterIngress is gone")
	}
}

// TestGatewayAPISettingReachesTheEngagement: a cluster is engaged with the Gateway API setting of
// its spec (Disabled when unset, as for a ClusterIngress written before the setting existed), and a
// profile that turns it on, then off again, changes the settings the cluster is engaged with,
// which re-engages it.
func TestGatewayAPISettingReachesTheEngagement(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	f := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, KubeconfigSecrets: seed.Client, UnwatchedSecrets: seed.Client,
		Sources: sources.Registry{sources.NewKubeconfigSecrets([]string{ns})}, Resync: time.Minute, Registry: f}
	key := clusterIngress(t, seed.Client, ns, "gw", v1alpha1.SourceKindSecret)
	secret(t, seed.Client, ns, "gw", kubeconfig(t, ""))
	controllertest.Reconcile(t, r, key, 1)
	if s, ok := f.Settings[key]; !ok || s.GatewayAPI {
		t.Fatalf("engaged with %+v (%v), want Gateway API off by default", s, ok)
	}
	ci := &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	ci.Spec.GatewayAPI = v1alpha1.GatewayAPIEnabled
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if s := f.Settings[key]; !s.GatewayAPI {
		t.Fatalf("engaged with %+v after the profile turned Gateway API on", s)
	}
	if err := seed.Client.Get(context.Background(), key, ci); err != nil {
		t.Fatal(err)
	}
	ci.Spec.GatewayAPI = v1alpha1.GatewayAPIDisabled
	if err := seed.Client.Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, r, key, 1)
	if s := f.Settings[key]; s.GatewayAPI {
		t.Fatalf("engaged with %+v after the profile turned Gateway API off", s)
	}
}
