package render

import (
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// admissionPolicyName names the ValidatingAdmissionPolicy and its binding.
const admissionPolicyName = "shardgate-allocation"

// AdmissionPolicy renders a ValidatingAdmissionPolicy (and binding) that lets only Shardgate,
// acting as shardgateUser, set or change a route's shard label and allocation annotations, and
// the managed-by label outside Shardgate's namespace: a user who labels an Ingress by hand is
// refused by the API server itself. It covers every route kind's Protected resources, the status
// subresource too: the API server keeps label and annotation changes sent through it, and
// routers (and other ingress controllers) may write route status.
//
// guards are what the cluster's routers would take from tenants (Flavour.TenantGuards of its
// shards' flavours): nobody but Shardgate may add or change such annotations on routes or Services,
// or make a Service ExternalName; the policy then matches Services too.
func AdmissionPolicy(shardgateUser string, kinds routekinds.Registry, guards TenantGuards,
) ([]*unstructured.Unstructured, error) {
	if len(kinds) == 0 {
		return nil, errors.New("no route kinds: the admission policy would protect nothing")
	}
	rules := protectedRules(kinds)
	if guards.any() {
		rules = append(rules, createOrUpdate("", "v1", []string{"services"}))
	}
	var ann []string
	for _, k := range v1alpha1.AllocationAnnotations {
		ann = append(ann, fmt.Sprintf("object.metadata.?annotations[?%q].orValue('') == (oldObject == null ? '' : oldObject.metadata.?annotations[?%q].orValue(''))", k, k))
	}
	validations := []admissionregistrationv1.Validation{
		{
			Expression: fmt.Sprintf("variables.isShardgate || object.metadata.?labels[?%q].orValue('') == (oldObject == null ? '' : oldObject.metadata.?labels[?%q].orValue(''))", v1alpha1.ShardLabel, v1alpha1.ShardLabel),
			Message:    "the " + v1alpha1.ShardLabel + " label is set by Shardgate, which allocates every Ingress to a shard; remove it from your manifest",
			Reason:     ptr.To(metav1.StatusReasonForbidden),
		},
		{
			// Only Shardgate's own objects in its namespace carry the managed-by label; on a
			// tenant's Ingress it would pass for Shardgate's canary.
			Expression: fmt.Sprintf("variables.isShardgate || object.metadata.namespace == %q || "+
				"object.metadata.?labels[?%q].orValue('') == (oldObject == null ? '' : oldObject.metadata.?labels[?%q].orValue(''))",
				names.Namespace, v1alpha1.ManagedByLabel, v1alpha1.ManagedByLabel),
			Message: "the " + v1alpha1.ManagedByLabel + " label marks Shardgate's own objects in " + names.Namespace +
				"; remove it from your manifest",
			Reason: ptr.To(metav1.StatusReasonForbidden),
		},
		{
			Expression: "variables.isShardgate || (" + strings.Join(ann, " && ") + ")",
			Message:    "the shardgate.io/ allocation annotations are written by Shardgate only",
			Reason:     ptr.To(metav1.StatusReasonForbidden),
		},
		{
			// Routers that select routes by an ingress.class annotation (FilterByClassAnnotation)
			// read it under any prefix: one set by hand would have a shard's routers serve a
			// route Shardgate never allocated, whatever its host.
			Expression: fmt.Sprintf("variables.isShardgate || object.metadata.?annotations.orValue({}).all(k, "+
				"!(k == 'ingress.class' || k.endsWith('/ingress.class')) || !object.metadata.annotations[k].startsWith(%q) || "+
				"(oldObject != null && oldObject.metadata.?annotations[?k].orValue('') == object.metadata.annotations[k]))",
				v1alpha1.ShardClassPrefix),
			Message: "an ingress.class annotation starting " + v1alpha1.ShardClassPrefix + " names a shard's routers, " +
				"which only Shardgate allocates; name Shardgate's IngressClass in spec.ingressClassName instead",
			Reason: ptr.To(metav1.StatusReasonForbidden),
		},
	}
	validations = append(validations, tenantGuards(guards)...)
	for _, k := range kinds {
		gvk := k.GroupVersionKind()
		for _, g := range k.Guards() {
			resource := g.Resource
			if resource == "" {
				resource = k.Resource()
			}
			// Only on the kind's own objects (its resources, status included: the API server keeps
			// spec changes sent there for none of them, but a guard must not assume it).
			validations = append(validations, admissionregistrationv1.Validation{
				Expression: fmt.Sprintf("variables.isShardgate || request.resource.group != %q || request.resource.resource != %q || (%s)",
					gvk.Group, resource, g.Expression),
				Message: g.Message,
				Reason:  ptr.To(metav1.StatusReasonForbidden),
			})
		}
	}
	return policyObjects(admissionPolicyName, shardgateUser, rules, validations, nil)
}

// claimGuardsPolicyName names the policy (and binding) of the tenant guards of flavours that only
// claimed shards run.
const claimGuardsPolicyName = "shardgate-claim-guards"

// ClaimGuardsPolicy renders guards (of the flavours only claimed shards run: guardsOf) as a policy
// bound to the claims' namespaces alone: a claimed shard takes routes, and the Services they name,
// from its own namespace only, so nobody else's writes are restricted by a tenant's claim.
func ClaimGuardsPolicy(shardgateUser string, kinds routekinds.Registry, guards TenantGuards, namespaces []string,
) ([]*unstructured.Unstructured, error) {
	if len(namespaces) == 0 {
		return nil, errors.New("claim guards without a claim's namespace would hold everywhere")
	}
	rules := append(protectedRules(kinds), createOrUpdate("", "v1", []string{"services"}))
	scope := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName,
			Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}}
	return policyObjects(claimGuardsPolicyName, shardgateUser, rules, tenantGuards(guards), scope)
}

// protectedRules match creates and updates of every route kind's Protected resources.
func protectedRules(kinds routekinds.Registry) []admissionregistrationv1.NamedRuleWithOperations {
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, k := range kinds {
		gv := k.GroupVersionKind().GroupVersion()
		rules = append(rules, createOrUpdate(gv.Group, gv.Version, k.Protected()))
	}
	return rules
}

// policyObjects are a policy named name (validations of the requests rules match, by anyone but
// shardgateUser: variables.isShardgate) and its binding, denying, limited to scope when set.
func policyObjects(name, shardgateUser string, rules []admissionregistrationv1.NamedRuleWithOperations,
	validations []admissionregistrationv1.Validation, scope *admissionregistrationv1.MatchResources,
) ([]*unstructured.Unstructured, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: managedLabels("")},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			Variables: []admissionregistrationv1.Variable{
				{Name: "isShardgate", Expression: fmt.Sprintf("request.userInfo.username == %q", shardgateUser)},
			},
			Validations: validations,
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: managedLabels("")},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    scope,
		},
	}
	return toUnstructured(
		Object{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"), policy},
		Object{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"), binding},
	)
}

// createOrUpdate matches creates and updates of resources of group/version.
func createOrUpdate(group, version string, resources []string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
	}}
}

// tenantGuards are the validations of what the cluster's routers would take from tenants.
func tenantGuards(g TenantGuards) []admissionregistrationv1.Validation {
	var out []admissionregistrationv1.Validation
	if len(g.Annotations) > 0 {
		quoted := make([]string, len(g.Annotations))
		for i, n := range g.Annotations {
			quoted[i] = fmt.Sprintf("%q", n)
		}
		out = append(out, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("variables.isShardgate || object.metadata.?annotations.orValue({}).all(k, "+
				"![%s].exists(n, k == n || k.endsWith('/' + n)) || "+
				"(oldObject != null && oldObject.metadata.?annotations[?k].orValue('') == object.metadata.annotations[k]))",
				strings.Join(quoted, ", ")),
			Message: fmt.Sprintf("this cluster's routers read annotations named %s and %d more (under any prefix; the "+
				"operator guide lists them) as configuration every tenant's routes share; remove them, or ask the "+
				"cluster's operator", strings.Join(g.Annotations[:min(4, len(g.Annotations))], ", "), max(0, len(g.Annotations)-4)),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	}
	if g.ExternalNameServices {
		out = append(out, admissionregistrationv1.Validation{
			Expression: "variables.isShardgate || request.resource.resource != 'services' || " +
				"object.spec.?type.orValue('') != 'ExternalName' || " +
				"(oldObject != null && oldObject.spec.?type.orValue('') == 'ExternalName' && " +
				"oldObject.spec.?externalName.orValue('') == object.spec.?externalName.orValue(''))",
			Message: "this cluster's routers would proxy to a Service of type ExternalName, which can name any host " +
				"(the node's own localhost included); use a Service with a selector or EndpointSlices",
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	}
	if g.SharesRouteSpecs {
		allocated := fmt.Sprintf("(object.metadata.?labels[?%q].hasValue() || object.metadata.?annotations[?%q].hasValue())",
			v1alpha1.ShardLabel, v1alpha1.ShardClassAnnotation)
		out = append(out, admissionregistrationv1.Validation{
			Expression: "variables.isShardgate || request.resource.resource != 'ingresses' || " +
				"object.spec.?rules.orValue([]).all(r, r.?http.?paths.orValue([]).all(p, " +
				fmt.Sprintf(`size(p.?path.orValue('')) <= %d && !p.?path.orValue('').matches('[\\x00-\\x20\\x7f]')))`,
					routekinds.MaxSharedPathLength),
			Message: fmt.Sprintf("this cluster's routers write paths into line-based route maps: a path with a space or "+
				"a control character, or longer than %d characters, would add routes of its own", routekinds.MaxSharedPathLength),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}, admissionregistrationv1.Validation{
			// A new Ingress with one is refused or made a rule by allocation before a router serves it.
			Expression: "variables.isShardgate || request.resource.resource != 'ingresses' || " +
				"!has(object.spec.defaultBackend) || !" + allocated + " || (oldObject != null && " +
				"has(oldObject.spec.defaultBackend) && oldObject.spec.defaultBackend == object.spec.defaultBackend)",
			Message: "an allocated Ingress cannot take a spec.defaultBackend: its shard's routers, which every tenant " +
				"shares, would send every request they route nowhere to it; serve it from a rule",
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	}
	return out
}
