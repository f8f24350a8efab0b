package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// flavourChanges are the in-place flavour changes run on real pods, from the flavour of a
// conformance cluster to another: haproxy's routers select routes by Shardgate's class annotation,
// so they serve the routes a Traefik shard holds whatever class those name. (The way back holds
// until no route names HAProxy's class: TestAFlavourChangeWaitsUntilNothingIsDropped's kind.)
var flavourChanges = map[v1alpha1.Flavour]v1alpha1.Flavour{v1alpha1.FlavourTraefik: v1alpha1.FlavourHAProxy}

// FlavourChangeSpec runs after ConformanceSpec in its cluster, whose fourth node n4 takes role b:
// shard b gets a second router there, then its flavour changes in place to `to` under a looping
// HTTPS client. The change is held first: a route on b has a default backend beside its rules,
// which `to`'s routers would serve as every tenant's catch-all, so b keeps its routers and
// FlavourChangesHeld names the route. Once it is gone, the routers roll from one flavour to the
// other (one at a time: host ports cannot surge) and the client sees no failed request throughout.
// Its route keeps its host, its class and its shard, with the kept-for mark, and is served by the
// new flavour's routers on both nodes; status, the users' ConfigMap and the route's class
// annotation say the new flavour.
func FlavourChangeSpec(ctx context.Context, t *testing.T, in ConformanceSpecInput, to v1alpha1.Flavour) {
	seed, u := in.Seed, in.User
	profile := "conformance-" + string(in.Flavour.Name())
	bHost := "app.b." + in.ClusterID + "." + in.DNS.Zone
	n3, n4 := in.Nodes[2].IP, in.Nodes[3].IP
	router := &appsv1.Deployment{}
	routerKey := client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName("b")}
	rolledOut := func(image string) (bool, string) {
		if err := u.Client.Get(ctx, routerKey, router); err != nil {
			return false, err.Error()
		}
		st := router.Status
		got := router.Spec.Template.Spec.Containers[0].Image
		return got == image && router.Generation == st.ObservedGeneration && st.Replicas == 2 && st.UpdatedReplicas == 2 &&
				st.ReadyReplicas == 2,
			fmt.Sprintf("router image %s (want %s), replicas %d updated %d ready %d", got, image, st.Replicas,
				st.UpdatedReplicas, st.ReadyReplicas)
	}
	from := flavourImages[in.Flavour.Name()]
	update(ctx, t, u.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Nodes[3].Name}}, func(n *corev1.Node) {
		n.Labels["role"] = "b"
	})
	updateProfile(ctx, t, seed, profile, func(p *v1alpha1.IngressProfile) { p.Spec.Shards[1].Replicas = ptr.To[int32](2) })
	eventually(ctx, t, 3*time.Minute, func() (bool, string) { return rolledOut(from) })
	waitAnswer(ctx, t, in.DNS, bHost, framework.AnswerIs(n3, n4))

	odd := shardIngress("odd-b", "odd.b."+in.ClusterID+"."+in.DNS.Zone)
	odd.Spec.DefaultBackend = &odd.Spec.Rules[0].HTTP.Paths[0].Backend
	must(t, u.Client.Create(ctx, odd))
	eventually(ctx, t, time.Minute, func() (bool, string) {
		must(t, u.Client.Get(ctx, client.ObjectKeyFromObject(odd), odd))
		return odd.Labels[v1alpha1.ShardLabel] == "b", fmt.Sprintf("odd-b: labels %v", odd.Labels)
	})

	stop := loopTLSClient(ctx, in.DNS, in.Fabric, bHost, in.Roots)
	start := time.Now()
	updateProfile(ctx, t, seed, profile, func(p *v1alpha1.IngressProfile) {
		p.Spec.Shards[1].Flavour, p.Spec.Shards[1].Image = to, flavourImages[to]
	})
	eventually(ctx, t, time.Minute, func() (bool, string) {
		ci := getCI(ctx, t, seed, key(in.ClusterID))
		c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "Ingress default/odd-b would be refused"),
			fmt.Sprintf("FlavourChangesHeld %+v", c)
	})
	if ok, why := rolledOut(from); !ok {
		t.Errorf("shard b's routers changed while its change is held: %s", why)
	}
	must(t, u.Client.Delete(ctx, odd))
	eventually(ctx, t, 4*time.Minute, func() (bool, string) { return rolledOut(flavourImages[to]) })
	waitAnswer(ctx, t, in.DNS, bHost, framework.AnswerIs(n3, n4))
	time.Sleep(10 * time.Second) // the last old router's preStop drain ends
	n, failed := stop()
	t.Logf("flavour change %s → %s of 2 routers took %s; client: %d HTTPS requests, %d failed", in.Flavour.Name(), to,
		time.Since(start).Round(time.Second), n, failed)
	if n < 20 || failed > 0 {
		t.Errorf("%d of %d requests failed while shard b's routers changed flavour", failed, n)
	}
	for _, ip := range []string{n3, n4} {
		code, body, _, err := in.Fabric.GetTLS(ctx, ip+":443", bHost, in.Roots)
		if err != nil || code != 200 || !strings.Contains(body, "hello from web") {
			t.Errorf("https://%s via %s after the change: %d %q %v", bHost, ip, code, body, err)
		}
	}
	ing := &networkingv1.Ingress{}
	must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-b"}, ing))
	if ing.Labels[v1alpha1.ShardLabel] != "b" || ptr.Deref(ing.Spec.IngressClassName, "") != in.Flavour.IngressClass().Name ||
		ing.Annotations[v1alpha1.ShardClassAnnotation] != render.ShardRouteClass(v1alpha1.ShardSpec{Name: "b", Flavour: to}) ||
		ing.Annotations[v1alpha1.KeptForAnnotation] != string(in.Flavour.Name()) ||
		len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != bHost {
		t.Errorf("route web-b after the change: labels %v, class %v, annotations %v, rules %+v", ing.Labels,
			ptr.Deref(ing.Spec.IngressClassName, ""), ing.Annotations, ing.Spec.Rules)
	}
	ci := getCI(ctx, t, seed, key(in.ClusterID))
	if c := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionFlavourChangesHeld); c != nil {
		t.Errorf("FlavourChangesHeld after the change: %+v", c)
	}
	if i := slices.IndexFunc(ci.Status.Shards, func(s v1alpha1.ShardStatus) bool { return s.Name == "b" }); i < 0 ||
		ci.Status.Shards[i].Flavour != string(to) {
		t.Errorf("status.shards after the change: %+v", ci.Status.Shards)
	}
	info := &corev1.ConfigMap{}
	must(t, u.Client.Get(ctx, client.ObjectKey{Namespace: names.UserInfoNamespace, Name: names.UserInfoName}, info))
	if info.Data["shard.b.flavour"] != string(to) {
		t.Errorf("users are told shard b runs %q routers", info.Data["shard.b.flavour"])
	}
}
