package admission

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestReview(t *testing.T) {
	raw := func(a v1alpha1.AllocationSettings) []byte {
		return profileJSON(t, nil, v1alpha1.IngressProfileSpec{Allocation: a})
	}
	req := func(op admissionv1.Operation, object []byte) admissionv1.AdmissionRequest {
		return profileReview(op, object, nil)
	}
	update := func(old, new v1alpha1.AllocationSettings) admissionv1.AdmissionRequest {
		return profileReview(admissionv1.Update, raw(new), raw(old))
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
	b := profileJSON(t, nil, v1alpha1.IngressProfileSpec{Allocation: v1alpha1.AllocationSettings{Score: score}})
	r := Review(profileReview(admissionv1.Create, b, nil), "seed.example")
	if r.Allowed || len(r.Result.Message) > maxMessage || !strings.Contains(r.Result.Message, "more bytes)") ||
		!strings.HasPrefix(r.Result.Message, "spec.allocation.score") || !utf8Valid(r.Result.Message) {
		t.Fatalf("%d bytes: %.200s", len(r.Result.Message), r.Result.Message)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// invalidShards is a profile of size bytes (padded with spaces) whose every shard name is invalid
// (upper case).
func invalidShards(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"spec":{"shards":[`)
	for i := 0; b.Len() < size-len(`,{"name":"A0000000"}]}}`); i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"A%d"}`, i)
	}
	b.WriteString(strings.Repeat(" ", size-b.Len()-len(`]}}`)))
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// TestReviewBoundsTheRequest: a request sent to the webhook directly (no CRD schema) may hold far
// more than an honest profile; past maxObject it is refused unread, below it the denial names the
// errors that fit in maxMessage and counts the rest, worded as the API server words its own.
func TestReviewBoundsTheRequest(t *testing.T) {
	big, bigger := invalidShards(maxObject), invalidShards(maxObject+1)
	two := []byte(`{"spec":{"shards":[{"name":"A"},{"name":"B"}]}}`)
	tests := []struct {
		name        string
		op          admissionv1.Operation
		object, old []byte
		code        int32
		prefix      string
		suffix      string
	}{
		{"an object past the bound", admissionv1.Create, bigger, nil, 413, "the IngressProfile is", ""},
		{"an old object past the bound", admissionv1.Update, two, bigger, 413, "the IngressProfile is", ""},
		{"at the bound: the errors that fit, and how many more", admissionv1.Create, big, nil, 422,
			`[spec.shards[0].name: Invalid value: "A0": a lowercase RFC 1123 label`, " more errors)]"},
		{"two errors, whole", admissionv1.Create, two, nil, 422,
			`[spec.shards[0].name: Invalid value: "A": `, `regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]`},
	}
	for _, tt := range tests {
		if len(big) != maxObject || len(bigger) != maxObject+1 {
			t.Fatalf("the objects are %d and %d bytes, not at and past the bound", len(big), len(bigger))
		}
		r := Review(profileReview(tt.op, tt.object, tt.old), "seed.example")
		if r.Allowed || r.Result == nil || r.Result.Code != tt.code || len(r.Result.Message) > maxMessage ||
			!strings.HasPrefix(r.Result.Message, tt.prefix) || !strings.HasSuffix(r.Result.Message, tt.suffix) {
			t.Errorf("%s: allowed %v, result %.300v; want code %d, at most %d bytes, %q...%q", tt.name, r.Allowed,
				r.Result, tt.code, maxMessage, tt.prefix, tt.suffix)
			continue
		}
		if tt.code == 422 && (r.Result.Reason != metav1.StatusReasonInvalid || strings.Contains(r.Result.Message, "B\": ") !=
			(tt.suffix != " more errors)]")) {
			t.Errorf("%s: reason %q, message %.300q", tt.name, r.Result.Reason, r.Result.Message)
		}
	}
}

// TestReviewRatchetsOnTheFieldsValue: an update is excused an error the old object had only where
// it leaves that field's value as it was, also for errors whose message shows no value.
func TestReviewRatchetsOnTheFieldsValue(t *testing.T) {
	relabelled := map[string]string{"team": "a"}
	ext := func(url, ca string) v1alpha1.IngressProfileSpec {
		return v1alpha1.IngressProfileSpec{Allocation: v1alpha1.AllocationSettings{
			Extender: &v1alpha1.AllocationExtender{URL: url, CABundle: ca}}}
	}
	shards := func(s ...v1alpha1.ShardSpec) v1alpha1.IngressProfileSpec {
		return v1alpha1.IngressProfileSpec{Shards: s}
	}
	long, longer := strings.Repeat("a", 63), strings.Repeat("b", 63) // valid labels, too long for an apex label
	// Forbidden (no value shown): a VIP on a shard that does not publish through VIPs.
	vipOn := func(name string, pool ...string) v1alpha1.ShardSpec {
		return v1alpha1.ShardSpec{Name: name, VIP: &v1alpha1.VIPSettings{Pool: pool}}
	}
	tests := []struct {
		name     string
		old, new v1alpha1.IngressProfileSpec
		allowed  bool
		want     string // in the denial
	}{
		{"a too-long name kept", shards(v1alpha1.ShardSpec{Name: long}), shards(v1alpha1.ShardSpec{Name: long}), true, ""},
		{"a too-long name changed", shards(v1alpha1.ShardSpec{Name: long}), shards(v1alpha1.ShardSpec{Name: longer}), false,
			"spec.shards[0].name: Too long"},
		{"an unusable CA kept", ext("https://x.example/", "junk"), ext("https://x.example/", "junk"), true, ""},
		{"an unusable CA changed", ext("https://x.example/", "junk"), ext("https://x.example/", "other junk"), false,
			"spec.allocation.extender.caBundle"},
		{"a forbidden VIP kept", shards(vipOn("a", "10.0.0.0/30")), shards(vipOn("a", "10.0.0.0/30")), true, ""},
		{"a forbidden VIP changed", shards(vipOn("a", "10.0.0.0/30")), shards(vipOn("a", "10.0.1.0/30")), false,
			"spec.shards[0].vip: Forbidden"},
		{"a forbidden VIP moved to another shard", shards(vipOn("a", "10.0.0.0/30"), v1alpha1.ShardSpec{Name: "b"}),
			shards(v1alpha1.ShardSpec{Name: "a"}, vipOn("b", "10.0.0.0/30")), false, "spec.shards[1].vip: Forbidden"},
		{"an invalid name kept, another written", shards(v1alpha1.ShardSpec{Name: "A"}),
			shards(v1alpha1.ShardSpec{Name: "A"}, v1alpha1.ShardSpec{Name: longer}), false, "spec.shards[1].name: Too long"},
	}
	for _, tt := range tests {
		r := Review(profileReview(admissionv1.Update, profileJSON(t, relabelled, tt.new), profileJSON(t, nil, tt.old)),
			"seed.example")
		switch {
		case tt.allowed && !r.Allowed:
			t.Errorf("%s: denied: %v", tt.name, r.Result)
		case !tt.allowed && (r.Allowed || r.Result.Code != 422 || !strings.Contains(r.Result.Message, tt.want)):
			t.Errorf("%s: allowed %v, result %v; want 422 with %q", tt.name, r.Allowed, r.Result, tt.want)
		case !tt.allowed && strings.Contains(tt.name, "kept, another") && strings.Contains(r.Result.Message, "shards[0]"):
			t.Errorf("%s: the kept error is not excused: %s", tt.name, r.Result.Message)
		}
	}
}

func TestValueAt(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"shards": []any{map[string]any{"name": "a"},
			map[string]any{"name": "b", "vip": map[string]any{"pool": []any{"x"}}}},
		"selector": map[string]any{"matchLabels": map[string]any{"k.io/x": "v"}},
	}}
	tests := []struct {
		path string
		want any // nil: absent
	}{
		{"spec.shards[1].name", "b"},
		{"spec.shards[1].vip.pool[0]", "x"},
		{"spec.shards[1].vip", map[string]any{"pool": []any{"x"}}},
		{"spec.selector.matchLabels[k.io/x]", "v"},
		{"spec.shards[2].name", nil},
		{"spec.shards[-1].name", nil},
		{"spec.shards[x].name", nil},
		{"spec.shards[0].vip", nil},
		{"spec.shards[0].name.more", nil},
		{"spec.shards[1", nil},
		{"status", nil},
	}
	for _, tt := range tests {
		got, ok := valueAt(obj, tt.path)
		if ok != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) && tt.want != nil {
			t.Errorf("valueAt(%q) = %v, %v; want %v", tt.path, got, ok, tt.want)
		}
	}
}

// TestHandleOneAtATime: while a review runs, another waits, and gives up when its caller does.
func TestHandleOneAtATime(t *testing.T) {
	h := Handler("seed.example")
	reviewing <- struct{}{} // a review in progress
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ProfilePath, strings.NewReader("{}")).WithContext(ctx))
	<-reviewing
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("a second review at once: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, ProfilePath, strings.NewReader(`{"request":{"uid":"u"}}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"allowed":true`) {
		t.Fatalf("a review once the first ended: %d %s", rec.Code, rec.Body)
	}
}
