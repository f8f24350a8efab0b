package admission

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestReview(t *testing.T) {
	profileKind := metav1.GroupVersionKind{Group: "shardgate.io", Version: "v1alpha1", Kind: "IngressProfile"}
	raw := func(a v1alpha1.AllocationSettings) []byte {
		b, err := json.Marshal(&v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: v1alpha1.IngressProfileSpec{Allocation: a}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := func(op admissionv1.Operation, object []byte) admissionv1.AdmissionRequest {
		return admissionv1.AdmissionRequest{Operation: op, Kind: profileKind, Object: runtime.RawExtension{Raw: object}}
	}
	update := func(old, new v1alpha1.AllocationSettings) admissionv1.AdmissionRequest {
		r := req(admissionv1.Update, raw(new))
		r.OldObject = runtime.RawExtension{Raw: raw(old)}
		return r
	}
	costly, costlier := `"a" in route.hosts ? 0 : 1`, `"b" in route.hosts ? 0 : 1`
	ext := func(url, ca string) v1alpha1.AllocationSettings {
		return v1alpha1.AllocationSettings{Extender: &v1alpha1.AllocationExtender{URL: url, CABundle: ca}}
	}
	tests := []struct {
		name string
		req  admissionv1.AdmissionRequest
		code int32  // 0: allowed
		want string // in the message
	}{
		{"valid", req(admissionv1.Create, raw(v1alpha1.AllocationSettings{Score: "shard.routes"})), 0, ""},
		{"valid update", req(admissionv1.Update, raw(v1alpha1.AllocationSettings{})), 0, ""},
		{"delete is not reviewed", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Kind: profileKind}, 0, ""},
		{"score does not compile", req(admissionv1.Create, raw(v1alpha1.AllocationSettings{Score: "shard.("})),
			422, "spec.allocation.score: Invalid value: \"shard.(\": score:"},
		{"score is not a number", req(admissionv1.Update, raw(v1alpha1.AllocationSettings{Score: `"a"`})),
			422, "not a number"},
		{"score costs too much", req(admissionv1.Create, raw(v1alpha1.AllocationSettings{Score: `"a" in route.hosts ? 0 : 1`})),
			422, "estimated worst-case cost"},
		// Ratcheting: what an update leaves as it was is not refused (written before the webhook
		// checked it, or while it was down); what it changes is.
		{"a costly score kept by an update", update(v1alpha1.AllocationSettings{Score: costly},
			v1alpha1.AllocationSettings{Score: costly, NamespaceOwnership: v1alpha1.OwnershipInterNamespaceAllowed}), 0, ""},
		{"a costly score changed by an update", update(v1alpha1.AllocationSettings{Score: costly},
			v1alpha1.AllocationSettings{Score: costlier}), 422, "estimated worst-case cost"},
		{"a costly score written by an update", update(v1alpha1.AllocationSettings{Score: "shard.routes"},
			v1alpha1.AllocationSettings{Score: costly}), 422, "estimated worst-case cost"},
		{"a broken score kept by an update", update(v1alpha1.AllocationSettings{Score: "shard.("},
			v1alpha1.AllocationSettings{Score: "shard.("}), 0, ""},
		{"a broken score changed by an update", update(v1alpha1.AllocationSettings{Score: "shard.("},
			v1alpha1.AllocationSettings{Score: "shard.)"}), 422, "spec.allocation.score"},
		{"a broken old object does not excuse a new error", func() admissionv1.AdmissionRequest {
			r := req(admissionv1.Update, raw(v1alpha1.AllocationSettings{Score: "shard.("}))
			r.OldObject = runtime.RawExtension{Raw: []byte("{")}
			return r
		}(), 422, "spec.allocation.score"},
		{"extender with user info", req(admissionv1.Create, raw(ext("https://u:p@x.example/", "x"))),
			422, "spec.allocation.extender.url"},
		{"extender CA without a certificate", req(admissionv1.Create, raw(ext("https://x.example/", "not PEM"))),
			422, "spec.allocation.extender.caBundle"},
		{"shards", req(admissionv1.Create, []byte(`{"spec":{"shards":[{"name":"a"},{"name":"a"}]}}`)),
			422, "spec.shards[1].name: Duplicate"},
		{"no object", req(admissionv1.Create, nil), 400, "holds no IngressProfile"},
		{"not JSON", req(admissionv1.Create, []byte("{")), 400, "decoding the IngressProfile"},
		{"wrong type", req(admissionv1.Create, []byte(`{"spec":{"shards":"x"}}`)), 400, "decoding the IngressProfile"},
		{"another kind", admissionv1.AdmissionRequest{Operation: admissionv1.Create,
			Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Secret"}, Object: runtime.RawExtension{Raw: []byte(`{}`)}},
			400, "not /v1, Kind=Secret"},
	}
	for _, tt := range tests {
		r := Review(tt.req, "seed.example")
		switch {
		case tt.code == 0 && !r.Allowed:
			t.Errorf("%s: denied: %v", tt.name, r.Result)
		case tt.code != 0 && (r.Allowed || r.Result == nil || r.Result.Code != tt.code || !strings.Contains(r.Result.Message, tt.want)):
			t.Errorf("%s: allowed %v, result %+v; want code %d and %q", tt.name, r.Allowed, r.Result, tt.code, tt.want)
		}
	}
}

// TestReviewBoundsItsMessage: a 4 KiB score, quoted in its error, makes no message past 2 KiB.
func TestReviewBoundsItsMessage(t *testing.T) {
	score := "shard.(" + strings.Repeat("é", 2000)
	b, _ := json.Marshal(&v1alpha1.IngressProfile{Spec: v1alpha1.IngressProfileSpec{
		Allocation: v1alpha1.AllocationSettings{Score: score}}})
	r := Review(admissionv1.AdmissionRequest{Operation: admissionv1.Create,
		Kind:   metav1.GroupVersionKind{Group: "shardgate.io", Version: "v1alpha1", Kind: "IngressProfile"},
		Object: runtime.RawExtension{Raw: b}}, "seed.example")
	if r.Allowed || len(r.Result.Message) > maxMessage || !strings.Contains(r.Result.Message, "more bytes)") ||
		!strings.HasPrefix(r.Result.Message, "spec.allocation.score") || !utf8Valid(r.Result.Message) {
		t.Fatalf("%d bytes: %.200s", len(r.Result.Message), r.Result.Message)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
