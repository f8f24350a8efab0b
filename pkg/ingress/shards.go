package ingress

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// ValidateShards reports every problem of a shard list at once, with the field it is in.
func ValidateShards(shards []v1alpha1.ShardSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range shards {
		p := path.Index(i)
		if seen[s.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen[s.Name] = true
		if msgs := validateLabel(s.Name); msgs != "" {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, msgs))
		}
		if s.Replicas != nil && *s.Replicas < 1 {
			errs = append(errs, field.Invalid(p.Child("replicas"), *s.Replicas, "must be at least 1"))
		}
		if _, ok := flavours[s.Flavour]; !ok && s.Flavour != "" {
			errs = append(errs, field.NotSupported(p.Child("flavour"), s.Flavour, flavourNames()))
		}
		switch s.Publishing {
		case "", v1alpha1.PublishHostNetwork, v1alpha1.PublishNodePort, v1alpha1.PublishLoadBalancer:
		default:
			errs = append(errs, field.NotSupported(p.Child("publishing"), s.Publishing,
				[]string{string(v1alpha1.PublishHostNetwork), string(v1alpha1.PublishNodePort), string(v1alpha1.PublishLoadBalancer)}))
		}
		for name, sel := range map[string]*metav1.LabelSelector{"namespaceSelector": s.NamespaceSelector, "routeSelector": s.RouteSelector} {
			if sel == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				errs = append(errs, field.Invalid(p.Child(name), sel, err.Error()))
			}
		}
	}
	return errs
}

// ShardDomain is the domain a shard owns: the cluster domain for "default", <shard>.<domain>
// otherwise.
func ShardDomain(shard, clusterDomain string) string {
	if shard == v1alpha1.DefaultShardName {
		return clusterDomain
	}
	return fmt.Sprintf("%s.%s", shard, clusterDomain)
}
