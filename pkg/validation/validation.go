// Package validation checks IngressProfiles beyond what their CRD's schema and CEL rules can
// express, with every problem named by its field. Every controller uses it: a profile is either
// valid as a whole or changes nothing.
package validation

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/render"
)

// Profile returns every problem of a profile: selectors, the zone (with the controller's
// default applied), the shards and the enums.
func Profile(p *v1alpha1.IngressProfile, defaultZone string) field.ErrorList {
	spec := field.NewPath("spec")
	errs := Selector(&p.Spec.ClusterSelector, spec.Child("clusterSelector"))
	dns := spec.Child("dns")
	if _, err := dnsname.NormalizeZone(v1alpha1.ResolveDNS(p.Spec.DNS, defaultZone).Zone); err != nil {
		errs = append(errs, field.Invalid(dns.Child("zone"), p.Spec.DNS.Zone, err.Error()))
	}
	if s := p.Spec.DNS.IngressNodeSelector; s != nil {
		errs = append(errs, Selector(s, dns.Child("ingressNodeSelector"))...)
	}
	errs = append(errs, Shards(v1alpha1.ResolveShards(p.Spec.Shards), spec.Child("shards"))...)
	a := spec.Child("allocation")
	errs = append(errs, enum(a.Child("strategy"), p.Spec.Allocation.Strategy, "", v1alpha1.StrategyRoundRobin, v1alpha1.StrategyLeastRoutes, v1alpha1.StrategyLeastLoaded,
		v1alpha1.StrategyLeastUtilized)...)
	errs = append(errs, enum(a.Child("namespaceOwnership"), p.Spec.Allocation.NamespaceOwnership, "", v1alpha1.OwnershipStrict, v1alpha1.OwnershipInterNamespaceAllowed)...)
	errs = append(errs, enum(a.Child("wildcardPolicy"), p.Spec.Allocation.WildcardPolicy, "", v1alpha1.WildcardsAllowed, v1alpha1.WildcardsDenied)...)
	errs = append(errs, Allocation(p.Spec.Allocation, a)...)
	errs = append(errs, enum(spec.Child("ingressClass", "default"), p.Spec.IngressClass.Default, "", v1alpha1.DefaultClassIfNoDefault, v1alpha1.DefaultClassNever)...)
	errs = append(errs, TLS(p.Spec.TLS, spec.Child("tls"))...)
	errs = append(errs, ProfileVIP(p.Spec.VIP, spec.Child("vip"))...)
	return errs
}

// cert-manager's own limits on a Certificate's duration and renewBefore (its webhook refuses
// less), and its default duration.
const (
	minDuration     = time.Hour
	minRenewBefore  = 5 * time.Minute
	defaultDuration = 90 * 24 * time.Hour
)

// TLS reports what would make the clusters' Certificates unusable: an issuer reference that
// cannot name one, and a duration or renewBefore cert-manager refuses.
func TLS(t v1alpha1.TLSSettings, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref := t.IssuerRef; ref != nil {
		p := path.Child("issuerRef")
		if msgs := validation.IsDNS1123Subdomain(ref.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, strings.Join(msgs, "; ")))
		}
		errs = append(errs, enum(p.Child("kind"), ref.Kind, "", v1alpha1.KindIssuer, v1alpha1.KindClusterIssuer)...)
		if ref.Group != "" {
			if msgs := validation.IsDNS1123Subdomain(ref.Group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("group"), ref.Group, strings.Join(msgs, "; ")))
			}
		}
	} else if t.Enabled != nil && *t.Enabled {
		errs = append(errs, field.Required(path.Child("issuerRef"), "enabled needs an issuer"))
	}
	duration := defaultDuration
	if t.Duration != nil {
		duration = t.Duration.Duration
		if duration < minDuration {
			errs = append(errs, field.Invalid(path.Child("duration"), t.Duration.String(), "must be at least 1h"))
		}
	}
	if t.RenewBefore != nil {
		switch rb := t.RenewBefore.Duration; {
		case rb < minRenewBefore:
			errs = append(errs, field.Invalid(path.Child("renewBefore"), t.RenewBefore.String(), "must be at least 5m"))
		case rb >= duration:
			errs = append(errs, field.Invalid(path.Child("renewBefore"), t.RenewBefore.String(), "must be less than the duration ("+duration.String()+")"))
		}
	}
	return errs
}

// Shards reports every problem of a shard list at once, with the field it is in.
func Shards(shards []v1alpha1.ShardSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range shards {
		p := path.Index(i)
		if seen[s.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen[s.Name] = true
		if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, strings.Join(msgs, "; ")))
		} else if len(s.Name) > dnsname.MaxApexLabel {
			errs = append(errs, field.TooLong(p.Child("name"), s.Name, dnsname.MaxApexLabel))
		}
		if s.Replicas != nil && *s.Replicas < 1 {
			errs = append(errs, field.Invalid(p.Child("replicas"), *s.Replicas, "must be at least 1"))
		}
		// The flavours this binary renders (the CRD's enum lists the same; tests register more).
		flavours := append([]v1alpha1.Flavour{""}, render.FlavourNames()...)
		errs = append(errs, enum(p.Child("flavour"), s.Flavour, flavours...)...)
		errs = append(errs, enum(p.Child("publishing"), s.Publishing, "", v1alpha1.PublishHostNetwork, v1alpha1.PublishNodePort, v1alpha1.PublishLoadBalancer, v1alpha1.PublishVIP, v1alpha1.PublishRoutedIP)...)
		errs = append(errs, VIP(s, p)...)
		errs = append(errs, RoutedIP(s, p)...)
		errs = append(errs, Load(s, p)...)
		errs = append(errs, enum(p.Child("imagePullPolicy"), s.ImagePullPolicy, "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
		if s.NamespaceSelector != nil {
			errs = append(errs, Selector(s.NamespaceSelector, p.Child("namespaceSelector"))...)
		}
		if s.RouteSelector != nil {
			errs = append(errs, Selector(s.RouteSelector, p.Child("routeSelector"))...)
		}
	}
	return errs
}

// Selector reports what makes a label selector unusable (operators, values, label syntax).
func Selector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return field.ErrorList{field.Invalid(path, sel.String(), err.Error())}
	}
	return nil
}

func enum[T ~string](path *field.Path, v T, allowed ...T) field.ErrorList {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != "" {
			names = append(names, string(a))
		}
	}
	return field.ErrorList{field.NotSupported(path, v, names)}
}

// Reason picks the condition reason for a profile's first problem.
func Reason(errs field.ErrorList) string {
	if len(errs) == 0 {
		return v1alpha1.ReasonValid
	}
	f := errs[0].Field
	switch {
	case strings.HasPrefix(f, "spec.dns.zone"):
		return v1alpha1.ReasonInvalidZone
	case strings.HasPrefix(f, "spec.shards"):
		return v1alpha1.ReasonShardsInvalid
	case strings.HasPrefix(f, "spec.clusterSelector"):
		return v1alpha1.ReasonClusterSelectorBad
	case strings.HasPrefix(f, "spec.dns.ingressNodeSelector"):
		return v1alpha1.ReasonIngressNodeSelectorBad
	case strings.HasPrefix(f, "spec.tls"):
		return v1alpha1.ReasonTLSInvalid
	}
	return v1alpha1.ReasonProfileInvalid
}
