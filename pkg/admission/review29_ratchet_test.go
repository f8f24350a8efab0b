package admission

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview29RatchetingKeysOnValuelessMessages (review29, Low, operator): newErrors claims to
// ratchet an error only when the update leaves the field "as it was, value and all", but it keys
// on field.Error.Error(), and several errors carry no value: field.TooLong (shard names past
// dnsname.MaxApexLabel), the extender's caBundle ("(PEM)"), Required. An update that writes a
// DIFFERENT invalid value into such a field (a new extender URL with a new unusable CA, a new
// too-long shard name) is admitted without a word, and the operator learns only later from
// Valid=False. Fix: ratchet on (path, type, the field's old raw value == new raw value), e.g.
// compare the old and new objects' values at e.Field, not the rendered message.
func TestReview29RatchetingKeysOnValuelessMessages(t *testing.T) {
	update := func(old, new v1alpha1.IngressProfileSpec) admissionv1.AdmissionRequest {
		return profileReview(admissionv1.Update, profileJSON(t, nil, new), profileJSON(t, nil, old))
	}
	ext := func(url, ca string) v1alpha1.IngressProfileSpec {
		return v1alpha1.IngressProfileSpec{Allocation: v1alpha1.AllocationSettings{
			Extender: &v1alpha1.AllocationExtender{URL: url, CABundle: ca}}}
	}
	shard := func(name string) v1alpha1.IngressProfileSpec {
		return v1alpha1.IngressProfileSpec{Shards: []v1alpha1.ShardSpec{{Name: name}}}
	}
	tests := []struct {
		name     string
		old, new v1alpha1.IngressProfileSpec
	}{
		{"a new extender and a new unusable CA", ext("https://old.example/", "junk"),
			ext("https://new.example/", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
		{"a new too-long shard name", shard(strings.Repeat("a", 63)), shard(strings.Repeat("b", 63))},
	}
	for _, tt := range tests {
		create := profileReview(admissionv1.Create, profileJSON(t, nil, tt.new), nil)
		if r := Review(create, "seed.example"); r.Allowed {
			t.Fatalf("%s: the new object is valid on its own; the test is wrong", tt.name)
		}
		if r := Review(update(tt.old, tt.new), "seed.example"); r.Allowed {
			t.Errorf("%s: allowed; the update writes a new invalid value, which ratcheting must not excuse", tt.name)
		}
	}
}
