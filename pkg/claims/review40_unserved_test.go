package claims

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
)

// TestReview40UnservedGRPCRoutesAreNotReclaimed: attacker O (or the operator at 3 a.m.). A
// claim bound to GRPCRoutes only (everBound) is admitted and serving. The cluster then stops
// serving GRPCRoutes to Shardgate: its owner drops grpcroutes from Shardgate's role (or applies
// an older rbac.yaml during an upgrade; clusteraccess asks again every 30 s and re-engages once it
// may list them), or the kind's CRD is briefly absent. Capabilities.Unserved marks the kind, so
// WhyNoGRPCRoutes is non-empty and Decide no longer binds the claim's GRPCRoutes: it counts zero
// bound routes and starts the reclaim grace ("every route it named is gone"), although the routes
// are still there and merely unreadable. Past the grace, reclaimPolicy Delete deletes the tenant's
// IngressClaim (out.Delete) and its shard; Retain releases it, and a released claim binds nothing
// until its tenant edits it, so the GRPCRoutes stay off the dedicated routers after the role is
// fixed. The allocation controller holds a planned kind that went unserved (AllocationHeld);
// the claims controller must likewise keep the record's binding (or at least not reclaim) while a
// kind it bound cannot be read: "nothing may be deleted or emptied because something could not be
// read".
func TestReview40UnservedGRPCRoutesAreNotReclaimed(t *testing.T) {
	const noGRPC = "the cluster does not serve GRPCRoutes to Shardgate (its condition GatewayAPIAvailable says why)"
	for _, policy := range []v1alpha1.ReclaimPolicy{v1alpha1.ReclaimDelete, v1alpha1.ReclaimRetain} {
		t.Run(string(policy), func(t *testing.T) {
			s := v1alpha1.ClaimSettings{Allowed: true, MaxPerNamespace: 2}
			c := claim("a", "rpc", 0)
			c.Spec.ReclaimPolicy = policy
			c.Spec.GRPCRoutes = []corev1.LocalObjectReference{{Name: "orders"}}
			in := Input{Claims: []Claim{c}, Settings: s, DefaultFlavour: v1alpha1.FlavourTraefik, ClusterDomain: "c1.z",
				GRPCRoutes: map[string]bool{"a/orders": true}, Ready: map[string]int32{"rpc-a": 1},
				Now: t0, Grace: time.Minute}
			limits(&in)
			in.WhyNoGRPCRoutes = func(f v1alpha1.Flavour) string { _, why := render.ClaimLimits(f, true, true); return why }
			first := Decide(in)
			if len(first.Records) != 1 || first.Records[0].Shard == "" || len(first.Records[0].GRPCRoutes) != 1 ||
				first.Records[0].Phase != v1alpha1.ClaimBound {
				t.Fatalf("premise: the claim is not bound to its GRPCRoute: %+v", first.Records)
			}

			// O drops grpcroutes from Shardgate's role: the kind is unserved, its routes not listed.
			in.Records, in.GRPCRoutes = first.Records, map[string]bool{}
			in.WhyNoGRPCRoutes = func(v1alpha1.Flavour) string { return noGRPC }
			in.Unreadable = map[string]bool{"GRPCRoute": true}
			out := Decide(in)
			r := out.Records[0]
			if r.IngressesGoneSince != nil || strings.Contains(r.Message, "every route it named is gone") {
				t.Errorf("the reclaim grace started because GRPCRoutes could not be read (gone since %v): %s",
					r.IngressesGoneSince, r.Message)
			}
			// Past the grace, the role still lacking grpcroutes.
			in.Records, in.Now = out.Records, t0.Add(2*time.Minute)
			out = Decide(in)
			if len(out.Delete) > 0 {
				t.Errorf("the tenant's claim is deleted (reclaimPolicy Delete) because its GRPCRoutes could not be read: %v", out.Delete)
			}
			if len(out.Records) == 1 && (out.Records[0].Phase == v1alpha1.ClaimReleased || out.Records[0].ReleasedGeneration != 0) {
				t.Errorf("the claim is released (binds nothing until edited) because its GRPCRoutes could not be read: %s",
					out.Records[0].Message)
			}
			// The role is fixed: the GRPCRoute is listed again, and the claim must bind it again.
			if len(out.Records) == 1 {
				in.Records, in.Now = out.Records, t0.Add(3*time.Minute)
				in.GRPCRoutes, in.Unreadable = map[string]bool{"a/orders": true}, nil
				in.WhyNoGRPCRoutes = func(f v1alpha1.Flavour) string { _, why := render.ClaimLimits(f, true, true); return why }
				out = Decide(in)
				if r := out.Records[0]; len(r.GRPCRoutes) != 1 || r.Phase != v1alpha1.ClaimBound {
					t.Errorf("with GRPCRoutes served again the claim does not bind its GRPCRoute (%s, bound %v): %s",
						r.Phase, r.GRPCRoutes, r.Message)
				}
			}
		})
	}
}
