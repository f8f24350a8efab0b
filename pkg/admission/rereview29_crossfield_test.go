package admission

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	kind := metav1.GroupVersionKind{Group: "shardgate.io", Version: "v1alpha1", Kind: "IngressProfile"}
	raw := func(replicas int32) []byte {
		b, err := json.Marshal(&v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: "a", Replicas: ptr.To(replicas),
				Load: &v1alpha1.ShardLoadSpec{MaxReplicas: ptr.To[int32](2)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	create := admissionv1.AdmissionRequest{Operation: admissionv1.Create, Kind: kind, Object: runtime.RawExtension{Raw: raw(50)}}
	if r := Review(create, "seed.example"); r.Allowed {
		t.Fatal("replicas 50 with maxReplicas 2 is valid on its own; the test is wrong")
	}
	update := admissionv1.AdmissionRequest{Operation: admissionv1.Update, Kind: kind,
		Object: runtime.RawExtension{Raw: raw(50)}, OldObject: runtime.RawExtension{Raw: raw(3)}}
	if r := Review(update, "seed.example"); r.Allowed {
		t.Error("an update writing replicas 50 above maxReplicas 2 was allowed: the old error at maxReplicas (same value) excused it")
	}
}
