package render_test

import (
	"testing"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestAttack2HAProxyShardWithoutPolicyAPI: every fix of the first HAProxy review (route-acl,
// server-crt/server-ca/auth-secret naming any namespace's Secret, ExternalName SSRF, a foreign
// ingress.class picking a shard's routers at creation) is an admission validation, and a user
// cluster without admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (before 1.30,
// caps.AdmissionPolicy false) gets no policy at all — yet its HAProxy shard is rendered as
// anywhere else. T's one Service annotation `route-acl: always_true } || { always_true` then takes
// every host of the shard, and RoutesProtected=False/AdmissionPolicyUnsupported only says "users
// could set the shard label and allocation annotations themselves". Traefik needs the policy for
// its marks only; HAProxy needs it for its configuration. An HAProxy shard must not be rendered
// (ShardsInvalid, or that shard failed) where the policy cannot be installed.
func TestAttack2HAProxyShardWithoutPolicyAPI(t *testing.T) {
	objs, err := render.DesiredObjects(render.DesiredInput{ClusterDomain: "c1.z.test", TTL: 60, ShardgateUser: "u",
		AdmissionPolicy: false, RouteKinds: routekinds.Registry{routekinds.Ingress{}},
		Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy}})})
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	var router, policy bool
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && o.GetName() == "router-heavy":
			router = true
		case o.GetKind() == "ValidatingAdmissionPolicy":
			policy = true
		}
	}
	if router && !policy {
		t.Error("an HAProxy shard is rendered in a cluster without the ValidatingAdmissionPolicy API: none of its " +
			"TenantGuards (route-acl, server-crt, auth-secret, ExternalName, ingress.class) is enforced")
	}
}
