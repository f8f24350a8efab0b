package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/sources"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// providers are the seed controller's providers: Cluster API, whose API is not discovered until
// a test says so, Kubermatic (never) and kubeconfig Secrets in the namespaces listed.
func providers(secretNamespaces ...string) sources.Registry {
	return sources.Registry{sources.NewClusterAPI(nil, logr.Discard()), sources.NewKubermatic(nil, logr.Discard()),
		sources.NewKubeconfigSecrets(secretNamespaces)}
}

type env struct {
	c     client.Client
	ns    string
	r     *Reconciler
	clock *clocktesting.FakeClock
	sel   map[string]string
}

func setup(t *testing.T) *env {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	clock := clocktesting.NewFakeClock(time.Now())
	e := &env{c: seed.Client, ns: ns, clock: clock, sel: map[string]string{"profile": ns},
		r: &Reconciler{Client: seed.Client, DefaultZone: "seed.test", Sources: providers(ns),
			RemovalGrace: time.Minute, Clock: clock, Board: cistatus.NewBoard(seed.Client)}}
	e.profile(t, ns, e.sel)
	return e
}

// posted is the SourceAvailable the reconciler posted for key (the DNS controller writes it).
func (e *env) posted(key types.NamespacedName) metav1.Condition {
	c, _ := e.r.Board.Posted(key, v1alpha1.ConditionSourceAvailable)
	return c
}

func (e *env) profile(t *testing.T, name string, sel map[string]string) *v1alpha1.IngressProfile {
	t.Helper()
	p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchLabels: sel}}}
	if err := e.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), p) })
	return p
}

func (e *env) secret(t *testing.T, name string, labels map[string]string) types.NamespacedName {
	t.Helper()
	l := map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: l}, Data: map[string][]byte{"kubeconfig": []byte("x")}}
	if err := e.c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(s)
}

// ci is the cluster's ClusterIngress, nil when there is none or its deletion was asked for (the
// other controllers' cleanup finalizers, which nobody removes here, hold it).
func (e *env) ci(t *testing.T, key types.NamespacedName) *v1alpha1.ClusterIngress {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := e.c.Get(context.Background(), key, ci); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	if ci.DeletionTimestamp != nil {
		return nil
	}
	return ci
}

func TestSelectedSourceGetsAClusterIngress(t *testing.T) {
	e := setup(t)
	key := e.secret(t, "c1", e.sel)
	controllertest.Reconcile(t, e.r, key, 1)
	ci := e.ci(t, key)
	if ci == nil || ci.Spec.Profile != e.ns || ci.Spec.ClusterID != "c1" || ci.Spec.DNS.Zone != "seed.test" ||
		len(ci.Spec.Shards) != 1 || ci.Spec.Allocation.Strategy != v1alpha1.StrategyLeastRoutes || len(ci.OwnerReferences) != 0 {
		t.Fatalf("ClusterIngress: %+v", ci)
	}
	// Created with the cleanup finalizers of the controllers that always run (no write each).
	if !slices.Equal(ci.Finalizers, []string{v1alpha1.DNSCleanupFinalizer, v1alpha1.AllocationCleanupFinalizer, v1alpha1.UserClusterCleanupFinalizer}) {
		t.Fatalf("finalizers: %v", ci.Finalizers)
	}
	if c, ok := e.r.Board.Posted(key, v1alpha1.ConditionSourceAvailable); !ok || c.Status != metav1.ConditionTrue {
		t.Fatalf("SourceAvailable: %+v", c)
	}
	// Not selected, in another namespace, or without the label: nothing.
	other := e.secret(t, "other", map[string]string{"profile": "nobody"})
	controllertest.Reconcile(t, e.r, other, 1)
	if e.ci(t, other) != nil {
		t.Fatal("an unselected source got a ClusterIngress")
	}
	e.r.Sources = providers()
	outside := e.secret(t, "outside", e.sel)
	controllertest.Reconcile(t, e.r, outside, 1)
	if e.ci(t, outside) != nil {
		t.Fatal("a Secret outside the listed namespaces registered a cluster")
	}
}

func TestInvalidProfileChangesNothing(t *testing.T) {
	e := setup(t)
	key := e.secret(t, "c1", e.sel)
	controllertest.Reconcile(t, e.r, key, 1)
	p := &v1alpha1.IngressProfile{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: e.ns}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"not a key!": "x"}}
	p.Spec.DNS.TTL = 5
	if err := e.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, e.r, key, 2)
	ci := e.ci(t, key)
	if ci == nil || ci.Spec.DNS.TTL != 60 {
		t.Fatalf("an invalid profile changed the cluster: %+v", ci)
	}
	newcomer := e.secret(t, "c2", e.sel)
	controllertest.Reconcile(t, e.r, newcomer, 1)
	if e.ci(t, newcomer) != nil {
		t.Fatal("an invalid profile took a new cluster")
	}
}

func TestVanishedSourceWaitsTheGracePeriod(t *testing.T) {
	e := setup(t)
	key := e.secret(t, "gitops", e.sel)
	controllertest.Reconcile(t, e.r, key, 1)
	if err := e.c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	res := controllertest.Reconcile(t, e.r, key, 1)
	ci := e.ci(t, key)
	missing, ok := e.r.Board.Posted(key, v1alpha1.ConditionSourceAvailable)
	if !ok || missing.Reason != v1alpha1.ReasonSourceMissing {
		t.Fatalf("SourceAvailable: %+v", missing)
	}
	// Reconciled again while missing: the message (when removal happens) stays the first one.
	e.clock.Step(10 * time.Second)
	controllertest.Reconcile(t, e.r, key, 1)
	if again, _ := e.r.Board.Posted(key, v1alpha1.ConditionSourceAvailable); again.Message != missing.Message {
		t.Fatalf("SourceAvailable's message moved: %q, was %q", again.Message, missing.Message)
	}
	if res.RequeueAfter != time.Minute {
		t.Fatalf("requeue after %s, want the grace period", res.RequeueAfter)
	}
	// Recreated within the grace period: adopted.
	e.secret(t, "gitops", e.sel)
	controllertest.Reconcile(t, e.r, key, 1)
	if again, c := e.ci(t, key), e.posted(key); again.UID != ci.UID || c.Status != metav1.ConditionTrue {
		t.Fatalf("not adopted: %+v", c)
	}
	// Gone for good: deleted once the grace period has passed (the API server keeps it while
	// the test's finalizer-less object is deleted at once).
	if err := e.c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, e.r, key, 1)
	e.clock.Step(30 * time.Second)
	controllertest.Reconcile(t, e.r, key, 1)
	if e.ci(t, key) == nil {
		t.Fatal("deleted within the grace period")
	}
	e.clock.Step(45 * time.Second)
	// The condition's time is the API server's; step past it by the whole grace period.
	e.clock.SetTime(time.Now().Add(2 * time.Minute))
	controllertest.Reconcile(t, e.r, key, 1)
	if e.ci(t, key) != nil {
		t.Fatal("kept past the grace period")
	}
}

func TestDeselectedOrDeletingClusterIsRemoved(t *testing.T) {
	e := setup(t)
	key := e.secret(t, "c1", e.sel)
	controllertest.Reconcile(t, e.r, key, 1)
	s := &corev1.Secret{}
	if err := e.c.Get(context.Background(), key, s); err != nil {
		t.Fatal(err)
	}
	delete(s.Labels, "profile")
	if err := e.c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, e.r, key, 1)
	if e.ci(t, key) != nil {
		t.Fatal("a deselected cluster kept its ClusterIngress")
	}
	// A Cluster API Cluster being deleted: removed at once, cleanup best-effort. Unknown Cluster
	// API: a Cluster's ClusterIngress is left alone.
	e.r.Sources.For(v1alpha1.SourceKindCluster).Discovery().Found()
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "capi", Labels: e.sel, Finalizers: []string{"test"}},
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(false)}}
	if err := e.c.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	ckey := client.ObjectKeyFromObject(c)
	controllertest.Reconcile(t, e.r, ckey, 1)
	if ci := e.ci(t, ckey); ci == nil || ci.Spec.ClusterRef.Kind != v1alpha1.SourceKindCluster {
		t.Fatalf("Cluster source: %+v", ci)
	}
	blind := &Reconciler{Client: e.c, DefaultZone: "seed.test", Sources: providers(), Clock: e.clock,
		RemovalGrace: time.Minute, Board: cistatus.NewBoard(e.c)}
	controllertest.Reconcile(t, blind, ckey, 2)
	if c, ok := blind.Board.Posted(ckey, v1alpha1.ConditionSourceAvailable); e.ci(t, ckey) == nil || (ok && c.Status != metav1.ConditionTrue) {
		t.Fatal("a controller that cannot see Cluster API touched a Cluster's ClusterIngress")
	}
	if err := e.c.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	controllertest.Reconcile(t, e.r, ckey, 1)
	ci := e.ci(t, ckey)
	if ci != nil && ci.DeletionTimestamp == nil {
		t.Fatal("a Cluster being deleted kept its ClusterIngress")
	}
	c.Finalizers = nil
	_ = e.c.Update(context.Background(), c)
}

// ClusterKeys lists a cluster by its source before it has a ClusterIngress, and a ClusterIngress
// whose source is gone, each once; Secrets count only when Secrets register clusters and only
// with the kubeconfig label.
func TestClusterKeysIncludeSourcesWithoutAClusterIngress(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	notYet := e.secret(t, "not-yet", e.sel)
	both := e.secret(t, "both", e.sel)
	controllertest.Reconcile(t, e.r, both, 1)
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "unlabelled"}}
	if err := e.c.Create(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	orphan := e.secret(t, "orphan", e.sel)
	controllertest.Reconcile(t, e.r, orphan, 1)
	if err := e.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	inNS := func(secrets bool) []string {
		registered := providers()
		if secrets {
			registered = providers(e.ns)
		}
		keys, err := ClusterKeys(e.c, registered)(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			if k.Namespace == e.ns {
				out = append(out, k.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := inNS(true), []string{both.Name, notYet.Name, orphan.Name}; !slices.Equal(got, want) {
		t.Fatalf("keys with Secrets: %v, want %v", got, want)
	}
	if got, want := inNS(false), []string{both.Name, orphan.Name}; !slices.Equal(got, want) {
		t.Fatalf("keys without Secrets: %v, want %v", got, want)
	}
}

// TestVIPAnnotationsAreNotReadAndSaySo: a source naming a VIP pool and L2 domain of its own does
// not get them (the profile decides: item 15 of issue 28), and its SourceAvailable says why.
func TestVIPAnnotationsAreNotReadAndSaySo(t *testing.T) {
	e := setup(t)
	key := e.secret(t, "c1", e.sel)
	s := &corev1.Secret{}
	must(t, e.c.Get(context.Background(), key, s))
	s.Annotations = map[string]string{v1alpha1.L2DomainAnnotation: "mine", v1alpha1.VIPPoolAnnotation: "192.0.2.0/28"}
	must(t, e.c.Update(context.Background(), s))
	p := &v1alpha1.IngressProfile{}
	must(t, e.c.Get(context.Background(), client.ObjectKey{Name: e.ns}, p))
	p.Spec.VIP = v1alpha1.ClusterVIPSettings{L2Domain: "hall-1", RouterIDs: &v1alpha1.RouterIDRange{First: 7, Last: 9}}
	must(t, e.c.Update(context.Background(), p))
	controllertest.Reconcile(t, e.r, key, 1)
	ci := e.ci(t, key)
	if ci == nil || ci.Spec.VIP.L2Domain != "hall-1" || len(ci.Spec.VIP.Pool) != 0 || ci.Spec.VIP.RouterIDs == nil || ci.Spec.VIP.RouterIDs.First != 7 {
		t.Fatalf("VIP settings: %+v", ci)
	}
	if c := e.posted(key); c.Status != metav1.ConditionTrue ||
		c.Message != "the kubeconfig Secret exists; its annotations shardgate.io/vip-pool, shardgate.io/l2-domain are not read: "+
			"VIP pools, L2 domains and router IDs are set by the operator in the IngressProfile (spec.vip)" {
		t.Fatalf("SourceAvailable: %+v", c)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
