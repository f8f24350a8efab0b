package shards

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// TestFailingShardDoesNotStopOthers (issue 28 item 4): the API server refusing one claimed
// shard's Deployment leaves the certificate Secret, the admission policy and every other shard
// applied, and names the shard and its claim.
func TestFailingShardDoesNotStopOthers(t *testing.T) {
	shards := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"},
		{Name: "bad-team", Replicas: ptr.To[int32](1), Claim: "team/bad"}, {Name: "good-other", Replicas: ptr.To[int32](1), Claim: "other/good"}})
	d, err := render.RenderDesired(render.DesiredInput{RouteKinds: routekinds.Registry{routekinds.Ingress{}},
		ClusterDomain: "c1.z", TTL: 60, Shards: shards, ShardgateUser: "u",
		AdmissionPolicy: true, TLS: &render.TLSInput{Cert: []byte("c"), Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	refused := names.RouterName("bad-team")
	var applied []string
	failed, err := applyDesired(d, func(o *unstructured.Unstructured) error {
		if o.GetKind() == "Deployment" && o.GetName() == refused {
			return errors.New("Deployment.apps is invalid: spec.template.spec.containers[0].resources.requests: must be less than or equal to cpu limit")
		}
		applied = append(applied, o.GetKind()+"/"+o.GetName())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Secret/" + names.TLSSecretName, "ValidatingAdmissionPolicy/shardgate-allocation",
		"Deployment/" + names.RouterName("default"), "Deployment/" + names.RouterName("good-other")} {
		if !slices.Contains(applied, want) {
			t.Errorf("%s not applied: %v", want, applied)
		}
	}
	if len(failed) != 1 || failed["bad-team"] == nil {
		t.Fatalf("failed %v", failed)
	}
	msg := failureError(shards, failed).Error()
	if !strings.Contains(msg, "shard bad-team (IngressClaim team/bad)") || strings.Contains(msg, "good-other") {
		t.Errorf("message %q", msg)
	}
	// A cluster-wide object that fails stops the pass.
	if _, err := applyDesired(d, func(o *unstructured.Unstructured) error {
		if o.GetKind() == "Namespace" {
			return errors.New("refused")
		}
		return nil
	}); err == nil {
		t.Error("a failed Namespace did not stop the pass")
	}
}
