package claims

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
