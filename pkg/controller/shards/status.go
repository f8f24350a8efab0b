package shards

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// RouterObservation is what the user cluster shows of one shard's routers.
type RouterObservation struct {
	// Deployed: the router Deployment exists; ReadyReplicas is its status.
	Deployed      bool
	ReadyReplicas int32
	// NoMatchingNode: the shard has a nodeSelector and no node matches it.
	NoMatchingNode bool
	// Unschedulable: a router pod is unschedulable.
	Unschedulable bool
}

// observeRouters gathers, per shard, what Availability decides from.
func observeRouters(ctx context.Context, rd client.Reader, shards []v1alpha1.ShardSpec) (map[string]RouterObservation, error) {
	nodes := &corev1.NodeList{}
	if err := rd.List(ctx, nodes); err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := rd.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}); err != nil {
		return nil, err
	}
	out := map[string]RouterObservation{}
	for _, s := range shards {
		var o RouterObservation
		d := &appsv1.Deployment{}
		switch err := rd.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(s.Name)}, d); {
		case err == nil:
			o.Deployed, o.ReadyReplicas = true, d.Status.ReadyReplicas
		case !apierrors.IsNotFound(err):
			return nil, err
		}
		if len(s.NodeSelector) > 0 {
			sel := labels.SelectorFromSet(s.NodeSelector)
			o.NoMatchingNode = !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return sel.Matches(labels.Set(n.Labels)) })
		}
		for _, p := range pods.Items {
			if p.Labels[v1alpha1.ShardLabel] != s.Name {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					o.Unschedulable = true
				}
			}
		}
		out[s.Name] = o
	}
	return out, nil
}

// Availability is ShardsAvailable: True when every shard of the profile has a ready router, else
// why not (the last shard's specific reason wins; messages name every shard that lacks one).
// A claimed shard is its tenant's: its IngressClaim says it has no ready router (Provisioning),
// and it never makes the cluster unavailable nor pages the operator (as OpenShift's ingress
// operator judges its default controller, not the ones users add); the message still names it
// and why, since the claims' nodes, image and publishing are the operator's.
func Availability(shards []v1alpha1.ShardSpec, obs map[string]RouterObservation) metav1.Condition {
	var missing, claimed []string
	reason := v1alpha1.ReasonNoRouterReady
	judged := 0
	for _, s := range shards {
		why, r := unavailable(s, obs[s.Name])
		switch {
		case s.Claim != "":
			if why != "" {
				claimed = append(claimed, why)
			}
			continue
		case why != "" && r != "":
			reason = r
		}
		judged++
		if why != "" {
			missing = append(missing, why)
		}
	}
	var tenants string
	if len(claimed) > 0 {
		// Tenants make claims: the message names a few, and counts them all.
		tenants = fmt.Sprintf("; %d%s (their IngressClaims say so): %s", len(claimed), v1alpha1.ClaimedShardsWithoutRouters,
			strings.Join(claimed[:min(len(claimed), maxClaimedNamed)], "; "))
	}
	if len(missing) > 0 {
		return condition(v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, reason,
			strings.Join(missing, "; ")+tenants)
	}
	return condition(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable,
		fmt.Sprintf("%d shard(s) have ready routers%s", judged, tenants))
}

// maxClaimedNamed bounds the claimed shards ShardsAvailable's message names.
const maxClaimedNamed = 5

// unavailable says why a shard has no ready router ("" when it has one), and the specific reason
// when there is one.
func unavailable(s v1alpha1.ShardSpec, o RouterObservation) (why, reason string) {
	switch {
	case !o.Deployed:
		return s.Name + ": router not created yet", ""
	case o.ReadyReplicas > 0:
		return "", ""
	case o.NoMatchingNode:
		return fmt.Sprintf("%s: no node matches nodeSelector %s", s.Name, labels.SelectorFromSet(s.NodeSelector)),
			v1alpha1.ReasonNoNodeMatchesSelector
	case o.Unschedulable:
		// The scheduler's message is the user cluster's words: only the fact is reported.
		return s.Name + ": router pods are unschedulable (see the pods' events in the user cluster)",
			v1alpha1.ReasonPodsUnschedulable
	}
	return s.Name + ": no router pod is ready yet", ""
}
