package allocation

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
)

// TestRoutesCarryTheirFlavour: with a flavour registered only here, an Ingress naming its class
// is Shardgate's and is for that flavour's routers; one naming Traefik's for Traefik's; classless
// ones for the cluster's first shard's flavour while no class is the default; another
// controller's stay out. Each shard carries its flavour.
func TestRoutesCarryTheirFlavour(t *testing.T) {
	flavourtest.Use(t)
	specs := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "fast", Flavour: flavourtest.Name}, {Name: "default"}})
	user := controllertest.UserCluster(clusteraccess.NewFake(), types.NamespacedName{Namespace: "seed", Name: "c1"},
		ingress("team", "fake", flavourtest.Class, "a.example.org"),
		ingress("team", "traefik", names.IngressClassName, "b.example.org"),
		ingress("team", "classless", "", "c.example.org"), ingress("team", "nginx", "nginx", "d.example.org"),
		&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}})
	spec := &v1alpha1.ClusterIngressSpec{IngressClass: v1alpha1.IngressClassSettings{Default: v1alpha1.DefaultClassIfNoDefault}}
	_, routes, _, err := collectRoutes(context.Background(), user.Client, user.RouteKinds(), spec, render.RouteFlavours(specs))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range routes {
		got[r.Name] = r.Flavour
	}
	want := map[string]string{"fake": string(flavourtest.Name), "traefik": "traefik", "classless": string(flavourtest.Name)}
	if len(got) != len(want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	for name, flavour := range want {
		if got[name] != flavour {
			t.Errorf("%s: flavour %q, want %q", name, got[name], flavour)
		}
	}
	shards, err := allocShards(context.Background(), user.Client, specs, "c1.z.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if shards[0].Flavour != string(flavourtest.Name) || shards[1].Flavour != "traefik" {
		t.Errorf("shards %+v", shards)
	}
}
