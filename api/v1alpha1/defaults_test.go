package v1alpha1

import "testing"

func TestResolveDNS(t *testing.T) {
	d := ResolveDNS(DNSSettings{}, "seed.example")
	if d.Zone != "seed.example" || d.TTL != 60 || d.EmptyTargets != EmptyTargetsKeepLast ||
		len(d.AddressTypes) != 2 || d.AddressTypes[0] != ExternalIP || len(d.IPFamilies) != 2 {
		t.Fatalf("defaults: %+v", d)
	}
	if d := ResolveDNS(DNSSettings{Zone: "own.example", TTL: 5}, "seed.example"); d.Zone != "own.example" || d.TTL != 5 {
		t.Fatalf("profile values not kept: %+v", d)
	}
}

func TestResolveAllocationAndClass(t *testing.T) {
	a := ResolveAllocation(AllocationSettings{})
	if a.Strategy != StrategyLeastRoutes || a.NamespaceOwnership != OwnershipStrict || a.WildcardPolicy != WildcardsDenied {
		t.Fatalf("allocation defaults: %+v", a)
	}
	if c := ResolveIngressClass(IngressClassSettings{}); c.Default != DefaultClassIfNoDefault {
		t.Fatalf("class default: %+v", c)
	}
}
