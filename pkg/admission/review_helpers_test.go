package admission

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// profileKind is the kind a review of an IngressProfile names.
var profileKind = metav1.GroupVersionKind{Group: "shardgate.io", Version: "v1alpha1", Kind: "IngressProfile"}

// profileJSON is the IngressProfile p with labels and spec, as a review carries it.
func profileJSON(t *testing.T, labels map[string]string, spec v1alpha1.IngressProfileSpec) []byte {
	t.Helper()
	b, err := json.Marshal(&v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// profileReview is a review of op on object, which replaces old (nil: none).
func profileReview(op admissionv1.Operation, object, old []byte) admissionv1.AdmissionRequest {
	return admissionv1.AdmissionRequest{Operation: op, Kind: profileKind,
		Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: old}}
}
