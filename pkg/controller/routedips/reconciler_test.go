package routedips

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routedip"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const addr = "203.0.113.10"

func node(name string, created time.Time) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:   corev1.NodeSpec{ProviderID: "p://" + name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func routerSlice(nodes ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: "router-edge-x",
		Labels: map[string]string{discoveryv1.LabelServiceName: names.RouterName("edge")}}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}, {Port: ptr.To[int32](443)}, {Port: ptr.To[int32](31080)}}}
	for _, n := range nodes {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To(n), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// TestMoveStartsWithTaintAndFirewallThenJob follows one address from nothing to a running Job
// against a real seed API server and a fake user cluster: the shard's RoutedIP is created, the
// youngest serving node is tainted, no Job starts until the class's firewall opens its ports on
// it, then the Job carries the inputs; a cluster owner's RoutedIP outside the class is refused in
// its status; deleting the cluster takes the taint off and lets it go.
func TestMoveStartsWithTaintAndFirewallThenJob(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	class := &v1alpha1.ClusterRoutedIPClass{ObjectMeta: metav1.ObjectMeta{Name: "c-" + ns}, Spec: v1alpha1.ClusterRoutedIPClassSpec{
		Addresses: []string{"203.0.113.0/28"}, AllowClusterOwners: true, FromSecretsRef: []corev1.LocalObjectReference{{Name: "creds"}},
		ProviderIDPattern: "p://[a-z]+",
		UpdateRoutedIP: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "cloud",
			Env: []corev1.EnvVar{{Name: v1alpha1.EnvRoutedIP, Value: "spoofed"}}}}}}},
		UpdateFirewall: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "f", Image: "cloud"}}}}}}}
	must(t, seed.Client.Create(ctx, class))
	t.Cleanup(func() { _ = seed.Client.Delete(ctx, class) })
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "c1"}, Profile: "p", ClusterID: "c1",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""),
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "edge", Publishing: v1alpha1.PublishRoutedIP,
			RoutedIP: &v1alpha1.RoutedIPSettings{ClassName: class.Name, Addresses: []string{addr}}}})}}
	must(t, seed.Client.Create(ctx, ci))
	key := client.ObjectKeyFromObject(ci)
	now := time.Now()
	access := clusteraccess.NewFake()
	owner := &v1alpha1.RoutedIP{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mine"},
		Spec: v1alpha1.RoutedIPSpec{ClassName: class.Name, Address: "198.51.100.7", ServiceRef: v1alpha1.ServiceReference{Name: "svc"}}}
	u := controllertest.UserCluster(access, key, node("old", now.Add(-time.Hour)), node("young", now.Add(-time.Minute)), node("idle", now),
		routerSlice("old", "young"), owner)
	u.Caps.CRDs = true
	r := &Reconciler{Client: seed.Client, APIReader: seed.Client, Access: access, JobNamespace: ns, Clock: clocktesting.NewFakePassiveClock(now), Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed.Client).WriteThrough()}

	controllertest.Reconcile(t, r, key, 2)
	rec := recordOf(t, seed.Client, key)
	if rec.MovingTo != "young" || rec.Node != "" || !strings.Contains(rec.Message, "firewall") {
		t.Fatalf("record %+v: want a move to young waiting for the firewall", rec)
	}
	if got := fmt.Sprint(rec.Ports); got != "[{80 TCP} {443 TCP}]" {
		t.Errorf("ports %s: want 80 and 443, not the NodePort", got)
	}
	assertTainted(t, u, "young")
	if n := jobs(t, seed.Client, ns); len(n) != 0 {
		t.Fatalf("a Job before the firewall opened: %v", n)
	}
	ri := &v1alpha1.RoutedIP{}
	must(t, u.Client.Get(ctx, types.NamespacedName{Namespace: names.Namespace, Name: names.RoutedIPName("edge", addr)}, ri))
	if ri.Spec.Address != addr || ri.Spec.ServiceRef.Name != names.RouterName("edge") || ri.Status.Phase != v1alpha1.RoutedIPMoving {
		t.Errorf("shard RoutedIP %+v", ri)
	}
	must(t, u.Client.Get(ctx, client.ObjectKeyFromObject(owner), owner))
	if c := meta.FindStatusCondition(owner.Status.Conditions, "Assigned"); owner.Status.Phase != v1alpha1.RoutedIPRefused || c == nil || c.Reason != v1alpha1.ReasonAddressNotInClass {
		t.Errorf("owner's RoutedIP outside the class: %+v", owner.Status)
	}

	// The firewall applied (as a successful updateFirewall Job would leave it): the Job starts,
	// with Shardgate's inputs winning over the class's own and the class's Secret as envFrom.
	class.Status.Firewall = routedip.DesiredFirewall([]v1alpha1.RoutedIPRecord{rec}, false)
	must(t, seed.Client.Status().Update(ctx, class))
	controllertest.Reconcile(t, r, key, 1)
	js := jobs(t, seed.Client, ns)
	if len(js) != 1 {
		t.Fatalf("%d Jobs, want 1", len(js))
	}
	env := map[string]string{}
	for _, e := range js[0].Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env[v1alpha1.EnvRoutedIP] != addr || env[v1alpha1.EnvNodeName] != "young" || env[v1alpha1.EnvNodeProviderID] != "p://young" || env[v1alpha1.EnvClusterID] != "" && env[v1alpha1.EnvClusterID] != "c1" {
		t.Errorf("Job inputs %v", env)
	}
	if from := js[0].Spec.Template.Spec.Containers[0].EnvFrom; len(from) != 1 || from[0].SecretRef.Name != "creds" {
		t.Errorf("envFrom %+v", from)
	}
	if js[0].Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || *js[0].Spec.BackoffLimit != 0 {
		t.Errorf("Job defaults: restart %s backoffLimit %d", js[0].Spec.Template.Spec.RestartPolicy, *js[0].Spec.BackoffLimit)
	}
	// Reconciling again does not start a second Job for the same move.
	controllertest.Reconcile(t, r, key, 2)
	if n := len(jobs(t, seed.Client, ns)); n != 1 {
		t.Errorf("%d Jobs after reconciling again", n)
	}

	// Deleting the cluster: the taint goes, then the finalizer.
	must(t, seed.Client.Get(ctx, key, ci))
	if !slices.Contains(ci.Finalizers, v1alpha1.RoutedIPCleanupFinalizer) {
		t.Fatalf("finalizers %v", ci.Finalizers)
	}
	// Other controllers' finalizers are not this test's: keep only ours.
	ci.Finalizers = []string{v1alpha1.RoutedIPCleanupFinalizer}
	must(t, seed.Client.Update(ctx, ci))
	must(t, seed.Client.Delete(ctx, ci))
	controllertest.Reconcile(t, r, key, 1)
	assertTainted(t, u)
	if err := seed.Client.Get(ctx, key, ci); err == nil {
		t.Errorf("ClusterIngress still there with finalizers %v", ci.Finalizers)
	}
}

// forget deletes a test's ClusterIngress from the seed the package's tests share, finalizers and
// all: its records would otherwise hold their addresses against the next test's cluster.
func forget(c client.Client, ci *v1alpha1.ClusterIngress) {
	ctx := context.Background()
	live := &v1alpha1.ClusterIngress{}
	if c.Get(ctx, client.ObjectKeyFromObject(ci), live) != nil {
		return
	}
	live.Finalizers = nil
	_ = c.Update(ctx, live)
	_ = c.Delete(ctx, live)
}

func recordOf(t *testing.T, c client.Client, key types.NamespacedName) v1alpha1.RoutedIPRecord {
	t.Helper()
	return record(t, c, key, addr)
}

func jobs(t *testing.T, c client.Client, ns string) []batchv1.Job {
	t.Helper()
	l := &batchv1.JobList{}
	must(t, c.List(context.Background(), l, client.InNamespace(ns)))
	return l.Items
}

// TestEndpointSlicesReadOnlyForRoutedIPs: a cluster without RoutedIPs is decided without reading
// its EndpointSlices (its cache then never watches them: they are watched on demand); once a
// RoutedIP appears, they are read.
func TestEndpointSlicesReadOnlyForRoutedIPs(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Spec: v1alpha1.ClusterIngressSpec{
		ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "plain"}, Profile: "p", ClusterID: "plain",
		DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, ""), Shards: v1alpha1.ResolveShards(nil)}}
	must(t, seed.Client.Create(ctx, ci))
	key := client.ObjectKeyFromObject(ci)
	now := time.Now()
	access := clusteraccess.NewFake()
	u := controllertest.UserCluster(access, key, node("n1", now), routerSlice("n1"))
	u.Caps.CRDs = true
	var sliceLists int
	u.Client = interceptor.NewClient(u.Client.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*discoveryv1.EndpointSliceList); ok {
				sliceLists++
			}
			return c.List(ctx, list, opts...)
		}})
	r := &Reconciler{Client: seed.Client, APIReader: seed.Client, Access: access, JobNamespace: ns, Clock: clocktesting.NewFakePassiveClock(now), Recorder: events.NewFakeRecorder(100), Board: cistatus.NewBoard(seed.Client).WriteThrough()}

	controllertest.Reconcile(t, r, key, 2)
	if sliceLists != 0 {
		t.Fatalf("EndpointSlices read %d times for a cluster without RoutedIPs", sliceLists)
	}
	must(t, u.Client.Create(ctx, &v1alpha1.RoutedIP{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mine"},
		Spec: v1alpha1.RoutedIPSpec{ClassName: "none", Address: "198.51.100.7", ServiceRef: v1alpha1.ServiceReference{Name: "svc"}}}))
	controllertest.Reconcile(t, r, key, 1)
	if sliceLists == 0 {
		t.Fatal("EndpointSlices not read once a RoutedIP asks for an address")
	}
}

func assertTainted(t *testing.T, u *clusteraccess.FakeCluster, want ...string) {
	t.Helper()
	nodes := &corev1.NodeList{}
	must(t, u.Client.List(context.Background(), nodes))
	var got []string
	for _, n := range nodes.Items {
		if slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
			return tt.Key == v1alpha1.RoutedIPTaintKey && tt.Effect == corev1.TaintEffectPreferNoSchedule
		}) {
			got = append(got, n.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("tainted %v, want %v", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFirewallMapFromEveryClustersRecords: the class's firewall Job carries the ports of every
// cluster's records of the class on their holders (and, unless post-allow, move targets).
func TestFirewallMapFromEveryClustersRecords(t *testing.T) {
	ctx := context.Background()
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	job := batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "cloud"}}}}}
	class := &v1alpha1.ClusterRoutedIPClass{ObjectMeta: metav1.ObjectMeta{Name: "fw-" + ns}, Spec: v1alpha1.ClusterRoutedIPClassSpec{
		Addresses: []string{"203.0.113.0/28"}, FirewallPostAllow: true, UpdateRoutedIP: job, UpdateFirewall: job, ProviderIDPattern: "p://[a-z]+-n[0-9]+"}}
	must(t, seed.Client.Create(ctx, class))
	t.Cleanup(func() { _ = seed.Client.Delete(ctx, class) })
	web := []v1alpha1.FirewallPort{{Port: 80, Protocol: "TCP"}}
	for i, recs := range [][]v1alpha1.RoutedIPRecord{
		{{Address: "203.0.113.1", ClassName: class.Name, RoutedIP: "a/a", Node: "n1", ProviderID: "p://a-n1", MovingTo: "n2", MovingProviderID: "p://a-n2", Ports: web}},
		{{Address: "203.0.113.2", ClassName: class.Name, RoutedIP: "b/b", Node: "n1", ProviderID: "p://b-n1", Ports: web},
			{Address: "203.0.113.3", ClassName: "other", RoutedIP: "b/c", Node: "n2", ProviderID: "p://b-n2", Ports: web}},
	} {
		ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i)}, Spec: v1alpha1.ClusterIngressSpec{
			ClusterRef: v1alpha1.ClusterReference{Kind: v1alpha1.SourceKindSecret, Name: "x"}, Profile: "p", ClusterID: "x",
			DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, "")}}
		must(t, seed.Client.Create(ctx, ci))
		ci.Status.RoutedIPs = recs
		must(t, seed.Client.Status().Update(ctx, ci))
	}
	f := &FirewallReconciler{Client: seed.Client, JobNamespace: ns, Clock: clocktesting.NewFakePassiveClock(time.Now()), Recorder: events.NewFakeRecorder(10)}
	controllertest.Reconcile(t, f, types.NamespacedName{Name: class.Name}, 1)
	js := jobs(t, seed.Client, ns)
	if len(js) != 1 {
		t.Fatalf("%d Jobs", len(js))
	}
	rules, err := rulesOf(&js[0])
	must(t, err)
	// Post-allow: holders only (not a/n2, the target of a move under way); class "other" is not this class's.
	if got := fmt.Sprint(rules); got != "[{80 TCP [p://a-n1 p://b-n1]}]" {
		t.Errorf("firewall map %s", got)
	}
}
