package v1alpha1

import "testing"

// TestProfileShardWinsItsName (issue 28 item 9): a profile shard added with a claimed shard's
// name takes it at once; the claim's shard is left out, so the shard set stays valid (no
// duplicate) until the claims controller provisions the claim under another name.
func TestProfileShardWinsItsName(t *testing.T) {
	ci := &ClusterIngress{Spec: ClusterIngressSpec{Shards: ResolveShards([]ShardSpec{{Name: "default"}, {Name: "shop-team"}})},
		Status: ClusterIngressStatus{Claims: []ClaimRecord{
			{Namespace: "team", Name: "shop", Shard: "shop-team", Phase: ClaimBound},
			{Namespace: "b", Name: "mine", Shard: "mine-b", Phase: ClaimBound},
			{Namespace: "c", Name: "refused", Phase: ClaimFailed},
		}}}
	var got []string
	for _, s := range ci.Shards() {
		got = append(got, s.Name+"/"+s.Claim)
	}
	want := []string{"default/", "shop-team/", "mine-b/b/mine"}
	if len(got) != len(want) {
		t.Fatalf("shards %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("shards %v, want %v", got, want)
		}
	}
}
