package claims

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func claim(ns, name string, age int, ingresses ...string) Claim {
	c := Claim{Namespace: ns, Name: name, Generation: 1, Created: t0.Add(time.Duration(age) * time.Minute),
		Spec: v1alpha1.IngressClaimSpec{Replicas: 1, ReclaimPolicy: v1alpha1.ReclaimRetain}}
	for _, i := range ingresses {
		c.Spec.Ingresses = append(c.Spec.Ingresses, corev1.LocalObjectReference{Name: i})
	}
	return c
}

func summary(out Output) string {
	var parts []string
	for _, r := range out.Records {
		parts = append(parts, fmt.Sprintf("%s/%s:%s:%s:%s:%v", r.Namespace, r.Name, r.Shard, r.Phase, r.Reason, r.Ingresses))
	}
	if len(out.Delete) > 0 {
		parts = append(parts, "delete "+strings.Join(out.Delete, ","))
	}
	return strings.Join(parts, " ")
}

func TestDecide(t *testing.T) {
	allowed := v1alpha1.ClaimSettings{Allowed: true, MaxReplicas: 2, MaxPerNamespace: 1,
		MaxResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	ings := map[string]bool{"a/web": true, "a/api": true, "b/web": true}
	ready := map[string]int32{"mine-a": 1}
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"admitted, bound, named after claim and namespace",
			Input{Claims: []Claim{claim("a", "mine", 0, "web", "api", "gone")}, Settings: allowed, Ingresses: ings, Ready: ready, ClusterDomain: "c.z.test"},
			"a/mine:mine-a:Bound:Bound:[api web]"},
		{"pending until a router is ready",
			Input{Claims: []Claim{claim("b", "mine", 0, "web")}, Settings: allowed, Ingresses: ings, Ready: ready},
			"b/mine:mine-b:Pending:Provisioning:[web]"},
		{"claims not allowed",
			Input{Claims: []Claim{claim("a", "mine", 0, "web")}, Ingresses: ings},
			"a/mine::Failed:ClaimsNotAllowed:[]"},
		{"turned off: admitted claims keep running, new ones refused",
			Input{Claims: []Claim{claim("a", "mine", 0, "web"), claim("b", "new", 1, "web")}, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1}}},
			"a/mine:mine-a:Bound:Bound:[web] b/new::Failed:ClaimsNotAllowed:[]"},
		{"too many replicas",
			Input{Claims: []Claim{func() Claim { c := claim("a", "big", 0, "web"); c.Spec.Replicas = 5; return c }()}, Settings: allowed, Ingresses: ings},
			"a/big::Failed:OverLimits:[]"},
		{"resources over or not allowed",
			Input{Claims: []Claim{func() Claim {
				c := claim("a", "big", 0, "web")
				c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
				return c
			}()}, Settings: allowed, Ingresses: ings},
			"a/big::Failed:OverLimits:[]"},
		{"one claim per namespace, the oldest",
			Input{Claims: []Claim{claim("a", "second", 2, "api"), claim("a", "first", 1, "web")}, Settings: allowed, Ingresses: ings},
			"a/first:first-a:Pending:Provisioning:[web] a/second::Failed:OverLimits:[]"},
		{"an edit over the limits keeps what was admitted",
			Input{Claims: []Claim{func() Claim { c := claim("a", "mine", 0, "web"); c.Spec.Replicas = 9; return c }()}, Settings: allowed, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 2}}},
			"a/mine:mine-a:Bound:EditRefused:[web]"},
		{"an Ingress is bound by the oldest claim naming it",
			Input{Claims: []Claim{claim("a", "x", 1, "web"), claim("a", "y", 2, "web", "api")}, Settings: func() v1alpha1.ClaimSettings { s := allowed; s.MaxPerNamespace = 2; return s }(), Ingresses: ings},
			"a/x:x-a:Pending:Provisioning:[web] a/y:y-a:Pending:Provisioning:[api]"},
		{"a name that is not a shard name gets a hash",
			Input{Claims: []Claim{claim("a", "my.claim", 0, "web")}, Settings: allowed, Ingresses: ings},
			"a/my.claim:claim-"},
		{"retain: released when its Ingresses are gone",
			Input{Claims: []Claim{claim("a", "mine", 0, "deleted")}, Settings: allowed, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, EverBound: true}}},
			"a/mine:mine-a:Released:Released:[]"},
		{"released: a new Ingress of the same name does not bind",
			Input{Claims: []Claim{claim("a", "mine", 0, "web")}, Settings: allowed, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, EverBound: true, ReleasedGeneration: 1}}},
			"a/mine:mine-a:Released:Released:[]"},
		{"released: an edit binds again",
			Input{Claims: []Claim{func() Claim { c := claim("a", "mine", 0, "web"); c.Generation = 2; return c }()}, Settings: allowed, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, EverBound: true, ReleasedGeneration: 1}}},
			"a/mine:mine-a:Bound:Bound:[web]"},
		{"recycle: stays bound",
			Input{Claims: []Claim{func() Claim {
				c := claim("a", "mine", 0, "deleted")
				c.Spec.ReclaimPolicy = v1alpha1.ReclaimRecycle
				return c
			}()}, Settings: allowed, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, EverBound: true}}},
			"a/mine:mine-a:Bound:Bound:[]"},
		{"delete: the record goes and the claim is deleted",
			Input{Claims: []Claim{func() Claim {
				c := claim("a", "mine", 0, "deleted")
				c.Spec.ReclaimPolicy = v1alpha1.ReclaimDelete
				return c
			}()}, Settings: allowed, Ingresses: ings, Ready: ready,
				Records: []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, EverBound: true}}},
			"delete a/mine"},
		{"never bound: no reclaim yet",
			Input{Claims: []Claim{func() Claim {
				c := claim("a", "mine", 0, "later")
				c.Spec.ReclaimPolicy = v1alpha1.ReclaimDelete
				return c
			}()}, Settings: allowed, Ingresses: ings},
			"a/mine:mine-a:Pending:Provisioning:[]"},
		{"a claimed shard never takes a profile shard's name",
			Input{Claims: []Claim{claim("a", "web", 0, "web")}, Settings: allowed, Ingresses: ings, ProfileShards: []string{"web-a"}},
			"a/web:claim-"},
		{"domain too long",
			Input{Claims: []Claim{claim("a", "mine", 0, "web")}, Settings: allowed, Ingresses: ings, ClusterDomain: strings.Repeat("x", 60) + "." + strings.Repeat("y", 60) + "." + strings.Repeat("z", 60) + "." + strings.Repeat("w", 50) + ".example.org"},
			"a/mine::Failed:NamesTooLong:[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := summary(Decide(c.in)); !strings.HasPrefix(got, c.want) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func withResources(c Claim, r corev1.ResourceRequirements) Claim {
	c.Spec.Resources = r
	return c
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// TestDecideValidatesResources (issue 28 item 4): a claim is admitted only with resources the API
// server accepts for the router's Deployment, its limits defaulted to maxResources; an admitted
// claim edited to such resources keeps what was admitted.
func TestDecideValidatesResources(t *testing.T) {
	capped := v1alpha1.ClaimSettings{Allowed: true, MaxReplicas: 2, MaxPerNamespace: 1, MaxResources: rl("cpu", "500m", "memory", "256Mi")}
	open := v1alpha1.ClaimSettings{Allowed: true, MaxReplicas: 2, MaxPerNamespace: 1}
	ings := map[string]bool{"a/web": true}
	admitted := []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1,
		Resources: corev1.ResourceRequirements{Limits: rl("cpu", "500m", "memory", "256Mi")}}}
	cases := []struct {
		name       string
		settings   v1alpha1.ClaimSettings
		records    []v1alpha1.ClaimRecord
		resources  corev1.ResourceRequirements
		want       string
		wantLimits corev1.ResourceList
	}{
		{"no resources: limits are maxResources", capped, nil, corev1.ResourceRequirements{},
			"a/mine:mine-a:Pending:Provisioning:[web]", rl("cpu", "500m", "memory", "256Mi")},
		{"a request alone: limits are maxResources", capped, nil, corev1.ResourceRequirements{Requests: rl("cpu", "100m")},
			"a/mine:mine-a:Pending:Provisioning:[web]", rl("cpu", "500m", "memory", "256Mi")},
		{"its own limit below the maximum stays", capped, nil, corev1.ResourceRequirements{Limits: rl("cpu", "200m")},
			"a/mine:mine-a:Pending:Provisioning:[web]", rl("cpu", "200m", "memory", "256Mi")},
		{"request above its limit", capped, nil, corev1.ResourceRequirements{Requests: rl("cpu", "300m"), Limits: rl("cpu", "200m")},
			"a/mine::Failed:InvalidResources:[]", nil},
		{"request above its limit, no maximum", open, nil, corev1.ResourceRequirements{Requests: rl("memory", "2Gi"), Limits: rl("memory", "1Gi")},
			"a/mine::Failed:InvalidResources:[]", nil},
		{"negative request", open, nil, corev1.ResourceRequirements{Requests: rl("cpu", "-1")},
			"a/mine::Failed:InvalidResources:[]", nil},
		{"negative limit", capped, nil, corev1.ResourceRequirements{Limits: rl("memory", "-1Mi")},
			"a/mine::Failed:InvalidResources:[]", nil},
		{"resources.claims", open, nil, corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
			"a/mine::Failed:InvalidResources:[]", nil},
		{"a resource a router cannot set", open, nil, corev1.ResourceRequirements{Limits: rl("example.com/widget", "1")},
			"a/mine::Failed:InvalidResources:[]", nil},
		{"no maximum, no limits: none set", open, nil, corev1.ResourceRequirements{Requests: rl("cpu", "100m")},
			"a/mine:mine-a:Pending:Provisioning:[web]", nil},
		{"an admitted claim edited to a request above its limit keeps what was admitted", capped, admitted,
			corev1.ResourceRequirements{Requests: rl("cpu", "400m"), Limits: rl("cpu", "100m")},
			"a/mine:mine-a:Pending:EditRefused:[web]", rl("cpu", "500m", "memory", "256Mi")},
		{"an admitted claim edited to a negative quantity keeps what was admitted", capped, admitted,
			corev1.ResourceRequirements{Requests: rl("memory", "-5Mi")},
			"a/mine:mine-a:Pending:EditRefused:[web]", rl("cpu", "500m", "memory", "256Mi")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Decide(Input{Claims: []Claim{withResources(claim("a", "mine", 0, "web"), c.resources)}, Settings: c.settings,
				Records: c.records, Ingresses: ings})
			if got := summary(out); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			got := out.Records[0].Resources.Limits
			if len(got) != len(c.wantLimits) {
				t.Fatalf("limits %v, want %v", got, c.wantLimits)
			}
			for name, q := range c.wantLimits {
				if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
					t.Errorf("limit %s: %v, want %s", name, got, q.String())
				}
			}
		})
	}
}

// TestDecideHostsAndNames (issue 28 item 9): held hosts win over new claimed shards, and a
// profile shard wins its name over a claimed shard that had it.
func TestDecideHostsAndNames(t *testing.T) {
	allowed := v1alpha1.ClaimSettings{Allowed: true, MaxReplicas: 2, MaxPerNamespace: 1}
	ings := map[string]bool{"team/web": true}
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"a host another namespace holds under the shard's domain refuses the claim",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, HeldHosts: map[string]string{"api.shop-team.c.z.test": "other"}},
			"team/shop::Failed:HostsHeld:[]"},
		{"the shard's apex held by another namespace refuses the claim",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, HeldHosts: map[string]string{"shop-team.c.z.test": "other"}},
			"team/shop::Failed:HostsHeld:[]"},
		{"a held wildcard under the shard's domain refuses the claim",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, HeldHosts: map[string]string{"*.shop-team.c.z.test": "other"}},
			"team/shop::Failed:HostsHeld:[]"},
		{"hosts of its own namespace do not",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, HeldHosts: map[string]string{"api.shop-team.c.z.test": "team"}},
			"team/shop:shop-team:Pending:Provisioning:[web]"},
		{"hosts beside the shard's domain do not",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, HeldHosts: map[string]string{"xshop-team.c.z.test": "other", "c.z.test": "other"}},
			"team/shop:shop-team:Pending:Provisioning:[web]"},
		{"an admitted claim keeps its shard (hosts taken later are the allocator's to refuse)",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, HeldHosts: map[string]string{"api.shop-team.c.z.test": "other"},
				Records: []v1alpha1.ClaimRecord{{Namespace: "team", Name: "shop", Shard: "shop-team", Replicas: 1}}},
			"team/shop:shop-team:Pending:Provisioning:[web]"},
		{"a profile shard that takes an admitted claim's name wins; the claim is provisioned again",
			Input{Claims: []Claim{claim("team", "shop", 0, "web")}, ProfileShards: []string{"default", "shop-team"},
				Records: []v1alpha1.ClaimRecord{{Namespace: "team", Name: "shop", Shard: "shop-team", Replicas: 1, EverBound: true}}},
			"team/shop:claim-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Settings, c.in.Ingresses, c.in.ClusterDomain = allowed, ings, "c.z.test"
			out := Decide(c.in)
			if got := summary(out); !strings.HasPrefix(got, c.want) {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if r := out.Records[0]; slices.Contains(c.in.ProfileShards, r.Shard) {
				t.Fatalf("the claim holds the profile's shard %s", r.Shard)
			} else if len(c.in.ProfileShards) > 0 && r.Reason != v1alpha1.ReasonClaimShardNameTaken {
				t.Errorf("reason %s: %s", r.Reason, r.Message)
			}
		})
	}
}

// TestDecideReclaimGrace (issue 28 item 18): a claim is reclaimed only once every Ingress it bound
// has stayed gone for the grace; an Ingress that comes back within it (kubectl replace --force)
// keeps the claim bound.
func TestDecideReclaimGrace(t *testing.T) {
	allowed := v1alpha1.ClaimSettings{Allowed: true, MaxReplicas: 2, MaxPerNamespace: 1}
	const grace = 5 * time.Minute
	now := t0.Add(time.Hour)
	since := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	bound := func(policy v1alpha1.ReclaimPolicy, goneSince *metav1.Time) ([]Claim, []v1alpha1.ClaimRecord) {
		c := claim("a", "mine", 0, "web")
		c.Spec.ReclaimPolicy = policy
		return []Claim{c}, []v1alpha1.ClaimRecord{{Namespace: "a", Name: "mine", Shard: "mine-a", Replicas: 1, EverBound: true,
			Ingresses: []string{"web"}, IngressesGoneSince: goneSince}}
	}
	cases := []struct {
		name      string
		policy    v1alpha1.ReclaimPolicy
		goneSince *metav1.Time
		ingresses map[string]bool
		want      string
		wantSince *metav1.Time
		requeue   time.Duration
	}{
		{"Retain: first pass without its Ingresses keeps it bound and starts the grace", v1alpha1.ReclaimRetain, nil, nil,
			"a/mine:mine-a:Bound:Bound:[]", since(0), grace},
		{"Delete: first pass without its Ingresses deletes nothing", v1alpha1.ReclaimDelete, nil, nil,
			"a/mine:mine-a:Bound:Bound:[]", since(0), grace},
		{"Retain: within the grace it stays bound", v1alpha1.ReclaimRetain, since(2 * time.Minute), nil,
			"a/mine:mine-a:Bound:Bound:[]", since(2 * time.Minute), 3 * time.Minute},
		{"Retain: after the grace it is released", v1alpha1.ReclaimRetain, since(grace), nil,
			"a/mine:mine-a:Released:Released:[]", nil, 0},
		{"Delete: after the grace the claim is deleted", v1alpha1.ReclaimDelete, since(grace + time.Second), nil,
			"delete a/mine", nil, 0},
		{"the Ingress back within the grace: bound, grace over", v1alpha1.ReclaimDelete, since(time.Minute), map[string]bool{"a/web": true},
			"a/mine:mine-a:Bound:Bound:[web]", nil, 0},
		{"Recycle: no grace needed, stays bound", v1alpha1.ReclaimRecycle, nil, nil,
			"a/mine:mine-a:Bound:Bound:[]", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims, records := bound(c.policy, c.goneSince)
			out := Decide(Input{Claims: claims, Records: records, Settings: allowed, Ingresses: c.ingresses,
				Ready: map[string]int32{"mine-a": 1}, Now: now, Grace: grace})
			if got := summary(out); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if out.RequeueAfter != c.requeue {
				t.Errorf("requeue after %s, want %s", out.RequeueAfter, c.requeue)
			}
			if len(out.Records) == 0 {
				return
			}
			if got := out.Records[0].IngressesGoneSince; (got == nil) != (c.wantSince == nil) || got != nil && !got.Equal(c.wantSince) {
				t.Errorf("ingressesGoneSince %v, want %v", got, c.wantSince)
			}
		})
	}
}
