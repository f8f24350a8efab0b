package allocation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

// A shard's flavour change (spec.shards[].flavour edited in place) is admitted into
// status.shardFlavours only when it drops nothing: every route the shard serves would stay on it,
// allocated, under the new flavour's routers, carries the kept-for mark that keeps it there, and
// sends to no Service the new routers would read configuration from or proxy anywhere through.
// Until then every controller renders, allocates and probes the shard as its old flavour
// (ClusterIngress.Shards), and FlavourChangesHeld names what holds it, as OpenShift's ingress
// operator holds a change it cannot roll out safely with a Degraded reason.

// heldChangeRecheck is how often a held change is looked at again besides route events (what holds
// it may be a Service, which the cache does not watch).
const heldChangeRecheck = 30 * time.Second

// maxBlockersTold bounds the routes FlavourChangesHeld names per shard (the count says the rest).
const maxBlockersTold = 5

// heldChange is a shard's flavour change that waits, and why.
type heldChange struct {
	change   v1alpha1.FlavourChange
	reason   string
	blockers []allocation.Blocker
	// total counts what holds it (blockers may name fewer).
	total int
}

// changingTo marks the planner shards whose flavour change is pending with the flavour they change
// to, and the class its routers select routes by where they do (Shard.ChangingTo).
func changingTo(shards []allocation.Shard, changes []v1alpha1.FlavourChange) {
	for _, c := range changes {
		for i := range shards {
			if shards[i].Name != c.Shard {
				continue
			}
			to := v1alpha1.ShardSpec{Name: c.Shard, Flavour: c.To}
			shards[i].ChangingTo = string(c.To)
			if class := render.ShardRouteClass(to); class != "" {
				shards[i].ChangingRouteClass, shards[i].ChangingSharesRouteSpecs = class, render.SharesRouteSpecs(to)
			}
		}
	}
}

// holdChanges decides each pending flavour change from this pass's plan: the ones still held, and
// why. written are the routes whose marks this pass wrote (not read back yet; a write that failed
// is retried by the next pass, which holds the change again); policyAPI: the cluster serves
// ValidatingAdmissionPolicy.
func holdChanges(ctx context.Context, api client.Reader, changes []v1alpha1.FlavourChange, policyAPI bool,
	cfg allocation.Config, shards []allocation.Shard, routes []allocation.Route, plan []allocation.Allocation,
	objects map[string]route, written map[string]bool,
) []heldChange {
	var held []heldChange
	for _, c := range changes {
		if why, _ := render.ClaimLimits(c.To, policyAPI, false); why != "" {
			held = append(held, heldChange{change: c, reason: v1alpha1.ReasonFlavourUnavailable,
				blockers: []allocation.Blocker{{Why: string(c.To) + " routers cannot run here: " + why}}})
			continue
		}
		after := slices.Clone(shards)
		for i := range after {
			if after[i].Name == c.Shard {
				setFlavour(&after[i], c.To)
				after[i].ChangingTo, after[i].ChangingRouteClass, after[i].ChangingSharesRouteSpecs = "", "", false
			}
		}
		blockers := allocation.ChangeBlockers(c.Shard, plan, allocation.PlanAllocations(cfg, after, allocation.AsMarked(routes, plan)))
		if len(blockers) > 0 {
			held = append(held, heldChange{change: c, reason: v1alpha1.ReasonRoutesBlockChange, blockers: blockers,
				total: len(blockers)})
			continue
		}
		if marking := markedThisPass(c.Shard, plan, written); len(marking) > 0 {
			held = append(held, heldChange{change: c, reason: v1alpha1.ReasonRoutesBeingMarked, blockers: marking,
				total: len(marking)})
			continue
		}
		blockers, err := serviceBlockers(ctx, api, c, plan, objects)
		switch {
		case err != nil:
			held = append(held, heldChange{change: c, reason: v1alpha1.ReasonServicesUnreadable,
				blockers: []allocation.Blocker{{Why: clusteraccess.DescribeError("read its routes' Services", err).Error()}}})
		case len(blockers) > 0:
			held = append(held, heldChange{change: c, reason: v1alpha1.ReasonRoutesBlockChange, blockers: blockers,
				total: len(blockers)})
		}
	}
	return held
}

// markedThisPass are the shard's routes whose marks this pass wrote: the change waits until they
// are read back, so that it is planned from what the routes say. A route whose write keeps failing
// (its owner filled its annotations, say) is named each pass (the controller's log says why).
func markedThisPass(shard string, plan []allocation.Allocation, written map[string]bool) []allocation.Blocker {
	var out []allocation.Blocker
	for _, a := range plan {
		if !a.Rejected && a.Shard == shard && written[routeKey(a.Kind, a.Namespace, a.Name)] {
			out = append(out, allocation.Blocker{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
				Why: "is being marked"})
		}
	}
	return out
}

// serviceBlockers are the shard's routes that send to a Service the new flavour's routers must
// not serve (routekinds.ServiceRefusal): set before the admission policy guarded Services, while
// the cluster had no shard of that flavour. The Services are read from the API server (the cache
// holds none), once the routes allow the change, and only in the namespaces of the shard's routes
// that send to one.
func serviceBlockers(ctx context.Context, api client.Reader, c v1alpha1.FlavourChange, plan []allocation.Allocation,
	objects map[string]route,
) ([]allocation.Blocker, error) {
	f, ok := render.FlavourFor(c.To)
	if !ok {
		return nil, nil
	}
	g := f.TenantGuards()
	reads := g.RouteAnnotations()
	if !g.ExternalNameServices && len(reads) == 0 {
		return nil, nil
	}
	wanted := map[string][]allocation.Allocation{} // namespace/service -> the routes that send to it
	var namespaces []string
	for _, a := range plan {
		if a.Rejected || a.Shard != c.Shard {
			continue
		}
		for _, name := range routekinds.BackendServices(objects[routeKey(a.Kind, a.Namespace, a.Name)].route) {
			wanted[a.Namespace+"/"+name] = append(wanted[a.Namespace+"/"+name], a)
			namespaces = append(namespaces, a.Namespace)
		}
	}
	slices.Sort(namespaces)
	var out []allocation.Blocker
	for _, ns := range slices.Compact(namespaces) {
		list := &corev1.ServiceList{}
		for {
			if err := api.List(ctx, list, client.InNamespace(ns), client.Limit(500), client.Continue(list.Continue)); err != nil {
				return nil, err
			}
			for i := range list.Items {
				svc := &list.Items[i]
				routes, named := wanted[svc.Namespace+"/"+svc.Name]
				if !named {
					continue
				}
				if why := routekinds.ServiceRefusal(svc, g.ExternalNameServices, reads); why != "" {
					for _, a := range routes {
						out = append(out, allocation.Blocker{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, Why: why})
					}
				}
			}
			if list.Continue == "" {
				break
			}
		}
	}
	slices.SortFunc(out, func(x, y allocation.Blocker) int {
		return strings.Compare(x.Kind+"/"+x.Namespace+"/"+x.Name, y.Kind+"/"+y.Namespace+"/"+y.Name)
	})
	return out, nil
}

// shardFlavours is status.shardFlavours: each spec shard's flavour and image, the old ones where
// a change is held.
func shardFlavours(spec []v1alpha1.ShardSpec, held []heldChange) []v1alpha1.ShardFlavour {
	out := make([]v1alpha1.ShardFlavour, 0, len(spec))
	for _, s := range spec {
		sf := v1alpha1.ShardFlavour{Name: s.Name, Flavour: s.Flavour, Image: s.Image}
		for _, h := range held {
			if h.change.Shard == s.Name {
				sf.Flavour, sf.Image = h.change.From, h.change.FromImage
			}
		}
		out = append(out, sf)
	}
	return out
}

// flavourChangesHeld is FlavourChangesHeld for the held changes; nil when none is held.
func flavourChangesHeld(held []heldChange) *metav1.Condition {
	if len(held) == 0 {
		return nil
	}
	parts := make([]string, 0, len(held))
	for _, h := range held {
		told := make([]string, 0, min(len(h.blockers), maxBlockersTold))
		for _, b := range h.blockers[:min(len(h.blockers), maxBlockersTold)] {
			if b.Name == "" {
				told = append(told, b.Why)
				continue
			}
			told = append(told, fmt.Sprintf("%s %s/%s %s", b.Kind, b.Namespace, b.Name, b.Why))
		}
		msg := fmt.Sprintf("shard %s keeps its %s routers (spec: %s) until ", h.change.Shard, h.change.From, h.change.To)
		switch h.reason {
		case v1alpha1.ReasonRoutesBeingMarked:
			msg += fmt.Sprintf("the marks written this pass on %d of its routes (the kept-for mark and %s's class "+
				"among them) are read back; a route named here pass after pass refuses the write (the controller's log says why): %s",
				h.total, h.change.To, strings.Join(told, "; "))
			if h.total > len(told) {
				msg += fmt.Sprintf(" (and %d more)", h.total-len(told))
			}
		case v1alpha1.ReasonServicesUnreadable:
			msg += "its routes' Services can be read: " + strings.Join(told, "; ")
		case v1alpha1.ReasonFlavourUnavailable:
			msg += strings.Join(told, "; ")
		default:
			msg += fmt.Sprintf("none of its routes would be dropped or served unsafely by %s routers: %s", h.change.To,
				strings.Join(told, "; "))
			if h.total > len(told) {
				msg += fmt.Sprintf(" (and %d more)", h.total-len(told))
			}
		}
		parts = append(parts, msg)
	}
	return &metav1.Condition{Type: v1alpha1.ConditionFlavourChangesHeld, Status: metav1.ConditionTrue,
		Reason: held[0].reason, Message: strings.Join(parts, ". ")}
}
