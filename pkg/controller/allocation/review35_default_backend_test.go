package allocation

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestReview35AdmittedHAProxyInheritsConvertedDefaultBackend: tenant T's Ingress solo on heavy
// (Traefik) had only a spec.defaultBackend; Shardgate gave it a rule under its default host and,
// since Traefik's routers do not share route specs, left the default backend beside it (the
// "converted" form Refusal lets through). heavy changes to HAProxy: solo is no blocker, gets its
// kept-for mark and HAProxy's class while held, and the change is admitted - with solo still
// carrying spec.defaultBackend. For HAProxy's routers a default backend is the shared frontend's
// default_backend: every request heavy routes nowhere, other tenants' hosts included, goes to T's
// Service. Only a later pass takes it away; the routers roll at the same moment (the same
// RunningFlavoursChanged event), and T can keep that pass's guarded patch losing (it updates its
// Ingress in a loop: the admission policy lets it keep the same default backend).
//
// Correct (as for the class annotation, review34 #1): while a change to a flavour whose routers
// share route specs is held, the kept Ingresses' converted default backends are taken away first
// (Traefik serves the rule), and the change is admitted only once none carries one.
func TestReview35AdmittedHAProxyInheritsConvertedDefaultBackend(t *testing.T) {
	label, _ := names.DefaultHostLabel("team", "solo")
	host := label + ".heavy.c1.z.test"
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
		Port: networkingv1.ServiceBackendPort{Number: 80}}}
	prefix := networkingv1.PathTypePrefix
	solo := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "solo",
			Labels: map[string]string{v1alpha1.ShardLabel: "heavy"},
			Annotations: map[string]string{v1alpha1.AllocationAnnotation: v1alpha1.AllocationAllocated,
				v1alpha1.ShardAnnotation: "heavy", v1alpha1.HostsAnnotation: host}},
		Spec: networkingv1.IngressSpec{IngressClassName: new(string), DefaultBackend: backend.DeepCopy(),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
					Backend: backend}}}}}}}}
	*solo.Spec.IngressClassName = names.IngressClassName
	r, ci, u, seed := review34Setup(t, nil, solo)
	ctx := context.Background()
	got := &networkingv1.Ingress{}
	must(t, u.Get(ctx, client.ObjectKeyFromObject(solo), got))
	if got.Labels[v1alpha1.ShardLabel] != "heavy" || got.Spec.DefaultBackend == nil {
		t.Fatalf("setup: solo under Traefik: labels %v defaultBackend %v", got.Labels, got.Spec.DefaultBackend)
	}
	review34Admit(t, r, seed, ci)
	must(t, u.Get(ctx, client.ObjectKeyFromObject(solo), got))
	if got.Labels[v1alpha1.ShardLabel] == "heavy" && got.Spec.DefaultBackend != nil {
		t.Errorf("heavy admitted as HAProxy (routers roll now) while solo, kept on heavy, still has spec.defaultBackend "+
			"%v: HAProxy's shared catch-all for every tenant's unrouted requests", got.Spec.DefaultBackend.Service)
	}
}

// TestRoutePatchTakesAwayWhatTellRemoved (found with review35): Tell takes a converted default
// backend away on routers that share route specs, but the merge patch of the spec named only what
// the new spec has, so the API server kept the default backend (a merge patch leaves out what it
// does not name) and every pass wrote the route again. The patch names a removed field as null.
func TestRoutePatchTakesAwayWhatTellRemoved(t *testing.T) {
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
		Port: networkingv1.ServiceBackendPort{Number: 80}}}
	o := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{DefaultBackend: &backend,
		Rules: []networkingv1.IngressRule{{Host: "a.example.org"}}}}
	want := o.DeepCopy()
	want.Spec.DefaultBackend = nil
	spec, ok := routePatch(routekinds.Ingress{}, o, want)["spec"].(map[string]any)
	if !ok {
		t.Fatalf("patch without the spec: %v", routePatch(routekinds.Ingress{}, o, want))
	}
	if v, named := spec["defaultBackend"]; !named || v != nil {
		t.Errorf("spec patch %v: want defaultBackend: null", spec)
	}
	if _, ok := spec["rules"]; ok {
		t.Errorf("spec patch %v names the rules, which did not change (the server keeps them as they are)", spec)
	}
}
