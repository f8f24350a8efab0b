package admission

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReReview29RatchetIgnoresTheOtherFieldOfACrossFieldError (rereview29, Low, operator): an
// error whose cause is two fields (load.maxReplicas "must be at least replicas") is keyed on the
// value at its one path only. An update that changes the OTHER field (replicas 3 -> 50, with
// maxReplicas 2 still below it) is excused, though it writes a new value the profile is invalid
// for. Impact: only the operator's early warning; the controller still reports Valid=False.
// Fix: key cross-field errors on every field they read (e.g. include the shard's replicas, or
// the whole shard, in the key), as CRD ratcheting does for rules on the parent object.
func TestReReview29RatchetIgnoresTheOtherFieldOfACrossFieldError(t *testing.T) {
	raw := func(replicas int32) []byte {
		return profileJSON(t, nil, v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: "a",
			Replicas: ptr.To(replicas), Load: &v1alpha1.ShardLoadSpec{MaxReplicas: ptr.To[int32](2)}}}})
	}
	create := profileReview(admissionv1.Create, raw(50), nil)
	if r := Review(create, "seed.example"); r.Allowed {
		t.Fatal("replicas 50 with maxReplicas 2 is valid on its own; the test is wrong")
	}
	update := profileReview(admissionv1.Update, raw(50), raw(3))
	if r := Review(update, "seed.example"); r.Allowed {
		t.Error("an update writing replicas 50 above maxReplicas 2 was allowed: the old error at maxReplicas (same value) excused it")
	}
}
