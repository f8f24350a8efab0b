package v1alpha1

import "k8s.io/utils/ptr"

// ResolveShards returns the profile's shards with defaults filled in; a profile without shards
// has one: "default", a single unsharded router.
func ResolveShards(shards []ShardSpec) []ShardSpec {
	if len(shards) == 0 {
		shards = []ShardSpec{{Name: DefaultShardName}}
	}
	out := make([]ShardSpec, len(shards))
	for i, s := range shards {
		s = *s.DeepCopy()
		if s.Flavour == "" {
			s.Flavour = FlavourTraefik
		}
		if s.Replicas == nil {
			s.Replicas = ptr.To[int32](1)
		}
		if s.Publishing == "" {
			s.Publishing = PublishHostNetwork
		}
		out[i] = s
	}
	return out
}
