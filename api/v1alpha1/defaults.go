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

// ResolveDNS returns a profile's DNS settings with defaults filled in (zone from the
// controller's --dns-zone when unset).
func ResolveDNS(d DNSSettings, defaultZone string) DNSSettings {
	d = *d.DeepCopy()
	if d.Zone == "" {
		d.Zone = defaultZone
	}
	if d.TTL == 0 {
		d.TTL = 60
	}
	if len(d.AddressTypes) == 0 {
		d.AddressTypes = []NodeAddressType{ExternalIP, InternalIP}
	}
	if len(d.IPFamilies) == 0 {
		d.IPFamilies = []IPFamily{IPv4, IPv6}
	}
	if d.EmptyTargets == "" {
		d.EmptyTargets = EmptyTargetsKeepLast
	}
	return d
}

// ResolveAllocation returns allocation settings with defaults filled in.
func ResolveAllocation(a AllocationSettings) AllocationSettings {
	if a.Strategy == "" {
		a.Strategy = StrategyLeastRoutes
	}
	if a.NamespaceOwnership == "" {
		a.NamespaceOwnership = OwnershipStrict
	}
	if a.WildcardPolicy == "" {
		a.WildcardPolicy = WildcardsDenied
	}
	return a
}

// ResolveIngressClass returns IngressClass settings with defaults filled in.
func ResolveIngressClass(c IngressClassSettings) IngressClassSettings {
	if c.Default == "" {
		c.Default = DefaultClassIfNoDefault
	}
	return c
}

// ShardsOrDefault are the ClusterIngress' shards, or the default shard when it lists none.
func (s *ClusterIngressSpec) ShardsOrDefault() []ShardSpec {
	if len(s.Shards) == 0 {
		return ResolveShards(nil)
	}
	return s.Shards
}
