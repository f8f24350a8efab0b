package render

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

func TestCanaryObjects(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "internal", Publishing: v1alpha1.PublishNodePort}})
	objs, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u", Canary: true})
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]string{}
	services := map[string]bool{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Ingress":
			ing := &networkingv1.Ingress{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ing); err != nil {
				t.Fatal(err)
			}
			r := ing.Spec.Rules[0]
			p := r.HTTP.Paths[0]
			if ing.Namespace != "shardgate-system" || *ing.Spec.IngressClassName != "shardgate" || p.Path != (Traefik{}).Canary().Path ||
				*p.PathType != networkingv1.PathTypeExact || p.Backend.Service.Name != ing.Name || ing.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
				t.Fatalf("canary Ingress %+v", ing)
			}
			hosts[ing.Labels[v1alpha1.ShardLabel]] = r.Host
		case o.GetKind() == "Service" && len(o.GetName()) > 7 && o.GetName()[:7] == "canary-":
			services[o.GetName()] = true
		}
	}
	if hosts["default"] != "shardgate-canary.c1.z" || hosts["internal"] != "shardgate-canary.internal.c1.z" || !services["canary-default"] || !services["canary-internal"] {
		t.Fatalf("canary hosts %v, services %v", hosts, services)
	}
	off, err := DesiredObjects(DesiredInput{RouteKinds: ingressOnly,
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range off {
		if o.GetKind() == "Ingress" {
			t.Fatalf("canary rendered while off: %s", o.GetName())
		}
	}
}

// ingressOnly is the route kinds a seed controller registers.
var ingressOnly = routekinds.Registry{routekinds.Ingress{}}
