package claims

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestDecideBindsHTTPRoutes: a claim binds the HTTPRoutes it names like its Ingresses (those that
// exist, the oldest claim first, its own namespace), and is reclaimed only once routes of both
// kinds are gone.
func TestDecideBindsHTTPRoutes(t *testing.T) {
	s := v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 2}
	naming := func(name string, age int, ingresses, httpRoutes []string) Claim {
		c := claim("a", name, age, ingresses...)
		for _, r := range httpRoutes {
			c.Spec.HTTPRoutes = append(c.Spec.HTTPRoutes, corev1.LocalObjectReference{Name: r})
		}
		return c
	}
	out := Decide(Input{Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik,
		Claims: []Claim{naming("late", 2, nil, []string{"web", "api"}), naming("first", 1, []string{"web"}, []string{"web", "gone"})},
		// Ingress a/web and HTTPRoute a/web are two routes: each kind binds by its own names.
		Ingresses: map[string]bool{"a/web": true}, HTTPRoutes: map[string]bool{"a/web": true, "a/api": true, "b/api": true},
		Ready: map[string]int32{"first-a": 1, "late-a": 1}})
	got := map[string]string{}
	for _, r := range out.Records {
		got[r.Name] = fmt.Sprintf("%v %v %s", r.Ingresses, r.HTTPRoutes, r.Message)
	}
	if want := "[web] [web] shard first-a: 1 ready routers serving 1 Ingresses and 1 HTTPRoutes"; got["first"] != want {
		t.Errorf("first: %s, want %s", got["first"], want)
	}
	if want := "[] [api] shard late-a: 1 ready routers serving 0 Ingresses and 1 HTTPRoutes"; got["late"] != want {
		t.Errorf("late: %s, want %s", got["late"], want)
	}

	// Its Ingress gone, an HTTPRoute it binds keeps the claim bound (no reclaim grace starts).
	rec := v1alpha1.ClaimRecord{Namespace: "a", Name: "first", Shard: "first-a", Replicas: 1, EverBound: true}
	out = Decide(Input{Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, Now: t0, Grace: time.Minute,
		Claims: []Claim{naming("first", 1, []string{"web"}, []string{"web"})}, Records: []v1alpha1.ClaimRecord{rec},
		HTTPRoutes: map[string]bool{"a/web": true}, Ready: map[string]int32{"first-a": 1}})
	if r := out.Records[0]; r.IngressesGoneSince != nil || r.Phase != v1alpha1.ClaimBound || out.RequeueAfter != 0 {
		t.Errorf("with an HTTPRoute left: %+v (requeue %s)", r, out.RequeueAfter)
	}
	// Both gone: the grace starts.
	out = Decide(Input{Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, Now: t0, Grace: time.Minute,
		Claims: []Claim{naming("first", 1, []string{"web"}, []string{"web"})}, Records: []v1alpha1.ClaimRecord{rec},
		Ready: map[string]int32{"first-a": 1}})
	if r := out.Records[0]; r.IngressesGoneSince == nil || !strings.Contains(r.Message, "every route it named is gone") {
		t.Errorf("with no route left: %+v", r)
	}
}
