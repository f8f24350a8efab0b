package allocation

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render"
)

// haproxyClasses is what haproxytech/kubernetes-ingress v1.11.12 reads as an Ingress' ingress.class
// (pkg/store/convert.go CopyAnnotations: every key's part after its first "/"; one of them wins,
// in map order, when several keys map to "ingress.class").
func haproxyClasses(ann map[string]string) []string {
	var out []string
	for k, v := range ann {
		if parts := strings.SplitN(k, "/", 2); parts[len(parts)-1] == "ingress.class" {
			out = append(out, v)
		}
	}
	return out
}

func haproxyCluster(t *testing.T, objs ...*networkingv1.Ingress) (*v1alpha1.ClusterIngressSpec, []v1alpha1.ShardSpec,
	map[string]route, []allocation.Route, []route) {
	t.Helper()
	specs := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "heavy", Flavour: v1alpha1.FlavourHAProxy}})
	spec := &v1alpha1.ClusterIngressSpec{Shards: specs}
	in := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}}
	for _, o := range objs {
		in = append(in, o)
	}
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"}, in...)
	byKey, routes, released, err := collectRoutes(context.Background(), user.Client, user.RouteKinds(), spec, render.RouteFlavours(specs))
	if err != nil {
		t.Fatal(err)
	}
	return spec, specs, byKey, routes, released
}

// TestAttackHAProxyForeignPrefixClassOutlivesShardgate: the admission policy's ingress.class rule
// is new in this change and lets an old value stay (oldObject has it), and clusters before 1.30
// have no policy at all. So an Ingress may carry `example.com/ingress.class: shardgate-shard-heavy`
// written before the upgrade (a tenant guesses shard names: default, or any claim's name), or
// before the operator switched shard heavy to the haproxy flavour. HAProxy reads that key as its
// class under any prefix, whatever spec.ingressClassName says and whatever Shardgate decided:
//   - on an Ingress of another controller's class, Shardgate neither releases nor refuses it
//     (CarriesAllocation knows only shardgate.io/ keys): heavy's routers serve it, any host,
//     another tenant's included, and nothing ever removes the key;
//   - on an Ingress of Shardgate's class that is rejected (here: another tenant holds its host),
//     TellMeta removes shardgate.io/ingress.class only: heavy keeps serving the rejected route.
func TestAttackHAProxyForeignPrefixClassOutlivesShardgate(t *testing.T) {
	victim := ingress("victim", "shop", "shardgate-haproxy", "shop.heavy.c1.z.test")
	victim.Labels = map[string]string{v1alpha1.ShardLabel: "heavy"}
	victim.Annotations = map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
		v1alpha1.ShardAnnotation: "heavy", v1alpha1.HostsAnnotation: "shop.heavy.c1.z.test",
		v1alpha1.ShardClassAnnotation: "shardgate-shard-heavy"}
	victim.CreationTimestamp = metav1.Unix(1, 0)
	elsewhere := ingress("team", "elsewhere", "another-controller", "shop.heavy.c1.z.test")
	elsewhere.Annotations = map[string]string{"example.com/ingress.class": "shardgate-shard-heavy"}
	grab := ingress("team", "grab", "shardgate-haproxy", "shop.heavy.c1.z.test")
	grab.Annotations = map[string]string{"example.com/ingress.class": "shardgate-shard-heavy"}
	grab.CreationTimestamp = metav1.Unix(2, 0)

	_, specs, byKey, routes, released := haproxyCluster(t, victim, elsewhere, grab)

	cleaned := false
	for _, r := range released {
		if r.route.GetName() == "elsewhere" {
			o := r.route.DeepCopyObject().(*networkingv1.Ingress)
			allocation.Untell(o)
			cleaned = len(haproxyClasses(o.Annotations)) == 0
		}
	}
	if !cleaned {
		t.Errorf("team/elsewhere (class another-controller) carries example.com/ingress.class: shardgate-shard-heavy: "+
			"shard heavy's HAProxy routers serve it (host shop.heavy.c1.z.test, the victim's), and Shardgate never removes the key "+
			"(released: %d routes)", len(released))
	}

	shards, err := allocShards(context.Background(), controllertest.UserCluster(clusteraccess.NewFake(),
		types.NamespacedName{Namespace: "seed", Name: "c2"}).Client, specs, "c1.z.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := allocation.StrategyFor("")
	for _, a := range allocation.PlanAllocations(allocation.Config{ClusterDomain: "c1.z.test", Zone: "z.test", Strategy: s}, shards, routes) {
		if a.Namespace != "team" || a.Name != "grab" {
			continue
		}
		if !a.Rejected {
			t.Fatalf("team/grab was not refused the victim's host: %+v", a)
		}
		o := byKey[routeKey("Ingress", "team", "grab")].route.DeepCopyObject().(*networkingv1.Ingress)
		allocation.TellMeta(o, a)
		for _, c := range haproxyClasses(o.Annotations) {
			if c == "shardgate-shard-heavy" {
				t.Errorf("team/grab rejected (%s) yet still names heavy's routers by ingress.class: they serve the victim's host "+
					"from the tenant's backend; annotations %v", a.Reason, o.Annotations)
			}
		}
	}
}

// TestAttackHAProxyAnyPrefixClassIsAShardFilter: the planner refuses, on a shard that selects by
// class annotation, only routes carrying kubernetes.io/ingress.class (ClassAnnotated). HAProxy
// reads ingress.class under any prefix, so `example.com/ingress.class: mine` (allowed by the
// policy: its value does not start shardgate-shard-) on an Ingress of Shardgate's HAProxy class is
// a second shard filter beside shardgate.io/ingress.class: the route is allocated to heavy and
// reported Allocated, while heavy's routers serve it or not depending on which key HAProxy's map
// iteration took (CopyAnnotations keeps one at random).
func TestAttackHAProxyAnyPrefixClassIsAShardFilter(t *testing.T) {
	ing := ingress("team", "web", "shardgate-haproxy", "")
	ing.Annotations = map[string]string{"example.com/ingress.class": "mine"}
	_, _, _, routes, _ := haproxyCluster(t, ing)
	for _, r := range routes {
		if r.Name == "web" && !r.ClassAnnotated {
			t.Errorf("team/web names a class by example.com/ingress.class, which HAProxy reads as its shard filter, "+
				"but the planner sees no class annotation: %+v", r)
		}
	}
}
