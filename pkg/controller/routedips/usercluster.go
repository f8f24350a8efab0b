package routedips

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routedip"
)

// shardRequests are the RoutedIPs the cluster's RoutedIP shards need, one per address.
func shardRequests(ci *v1alpha1.ClusterIngress) []*v1alpha1.RoutedIP {
	var out []*v1alpha1.RoutedIP
	for _, s := range ci.Spec.Shards {
		if s.Publishing != v1alpha1.PublishRoutedIP || s.RoutedIP == nil {
			continue
		}
		for _, a := range s.RoutedIP.Addresses {
			out = append(out, &v1alpha1.RoutedIP{
				TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RoutedIP"},
				ObjectMeta: metav1.ObjectMeta{Name: names.RoutedIPName(s.Name, a), Namespace: names.Namespace,
					Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ShardLabel: s.Name}},
				Spec: v1alpha1.RoutedIPSpec{ClassName: s.RoutedIP.ClassName, Address: a, ServiceRef: v1alpha1.ServiceReference{Name: names.RouterName(s.Name)}},
			})
		}
	}
	return out
}

func isShardRoutedIP(ri *v1alpha1.RoutedIP) bool {
	return ri.Namespace == names.Namespace && ri.Labels[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByValue && ri.Labels[v1alpha1.ShardLabel] != ""
}

// ensureShardRoutedIPs creates or repairs the shards' RoutedIPs and deletes Shardgate's RoutedIPs
// no shard asks for any more (a tenant's RoutedIPs are never touched).
func ensureShardRoutedIPs(ctx context.Context, cluster clusteraccess.Cluster, want []*v1alpha1.RoutedIP) error {
	have := &v1alpha1.RoutedIPList{}
	if err := cluster.Reader().List(ctx, have, client.InNamespace(names.Namespace)); err != nil {
		return clusteraccess.DescribeError("read the user cluster's RoutedIPs", err)
	}
	w := cluster.Writer()
	for _, ri := range want {
		i := slices.IndexFunc(have.Items, func(h v1alpha1.RoutedIP) bool { return h.Name == ri.Name })
		if i >= 0 && equality.Semantic.DeepEqual(have.Items[i].Spec, ri.Spec) && isShardRoutedIP(&have.Items[i]) {
			continue
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ri)
		if err != nil {
			return err
		}
		if err := w.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}), client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership); err != nil {
			return clusteraccess.DescribeError("apply RoutedIP "+ri.Name, err)
		}
	}
	for i := range have.Items {
		h := &have.Items[i]
		if isShardRoutedIP(h) && !slices.ContainsFunc(want, func(ri *v1alpha1.RoutedIP) bool { return ri.Name == h.Name }) {
			if err := w.Delete(ctx, h); client.IgnoreNotFound(err) != nil {
				return clusteraccess.DescribeError("delete RoutedIP "+h.Name, err)
			}
		}
	}
	return nil
}

// syncTaints puts the holder taint on every node a record names (holder or move target) and
// takes it off every other node: a new holder is tainted before its Job runs, an old one untainted
// once its record moved on.
func syncTaints(ctx context.Context, cluster clusteraccess.Cluster, nodes []corev1.Node, records []v1alpha1.RoutedIPRecord) error {
	want := map[string]bool{}
	for _, r := range records {
		for _, n := range []string{r.Node, r.MovingTo} {
			if n != "" {
				want[n] = true
			}
		}
	}
	for i := range nodes {
		n := &nodes[i]
		has := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.RoutedIPTaintKey })
		if has == want[n.Name] {
			continue
		}
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == v1alpha1.RoutedIPTaintKey })
		if want[n.Name] {
			taints = append(taints, corev1.Taint{Key: v1alpha1.RoutedIPTaintKey, Effect: corev1.TaintEffectPreferNoSchedule})
		}
		if err := patchTaints(ctx, cluster.Writer(), n, taints); err != nil {
			return clusteraccess.DescribeError("set the routed-IP taint of node "+n.Name, err)
		}
	}
	return nil
}

// patchTaints replaces the node's taints with an optimistic lock (the cached node is trimmed, so
// only spec.taints is written, against the resourceVersion it was read at).
func patchTaints(ctx context.Context, w client.Client, n *corev1.Node, taints []corev1.Taint) error {
	if taints == nil {
		taints = []corev1.Taint{}
	}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion}, "spec": map[string]any{"taints": taints}}
	return w.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}, client.RawPatch("application/merge-patch+json", mustJSON(patch)))
}

// Bounds of one pass' status writes into a user cluster: each write may wait for its API
// server, and the cluster's owner can create refused RoutedIPs at will or keep resetting their
// status. What is left is written on later passes (more reports it).
const (
	maxStatusWritesPerPass  = 16
	maxRefusedWritesPerPass = 4
)

// statusWrite is one RoutedIP whose status differs from what it should show.
type statusWrite struct {
	ri      *v1alpha1.RoutedIP
	status  v1alpha1.RoutedIPStatus
	refused bool
}

// boundedWrites picks this pass' writes: RoutedIPs the seed serves first (in order), then at
// most maxRefusedWritesPerPass refused ones, at most maxStatusWritesPerPass in all.
func boundedWrites(pending []statusWrite) (now []statusWrite, more bool) {
	refused := 0
	for _, served := range []bool{true, false} {
		for _, w := range pending {
			if w.refused == served {
				continue
			}
			if len(now) == maxStatusWritesPerPass || w.refused && refused == maxRefusedWritesPerPass {
				more = true
				continue
			}
			if w.refused {
				refused++
			}
			now = append(now, w)
		}
	}
	return now, more
}

// writeRoutedIPStatus mirrors the verdicts and records into each RoutedIP's status, as the user
// cluster may see them (routedip.UserView: a class Job's output stays in the seed), within the
// pass' bounds (more: some are left for the next pass).
func writeRoutedIPStatus(ctx context.Context, cluster clusteraccess.Cluster, rips []v1alpha1.RoutedIP, verdicts []routedip.Verdict,
	records []v1alpha1.RoutedIPRecord) (more bool, err error) {
	byKey := map[string]routedip.Verdict{}
	for _, v := range verdicts {
		byKey[v.Key] = v
	}
	byAddr := map[string]v1alpha1.RoutedIPRecord{}
	for _, r := range records {
		byAddr[r.Address] = r
	}
	var pending []statusWrite
	for i := range rips {
		ri := &rips[i]
		v, ok := byKey[ri.Namespace+"/"+ri.Name]
		if !ok {
			continue
		}
		st := *ri.Status.DeepCopy()
		cond := metav1.Condition{Type: "Assigned", ObservedGeneration: ri.Generation}
		rec, held := byAddr[ri.Spec.Address]
		held = held && rec.RoutedIP == v.Key
		refused := !v.Admitted && !held
		if refused {
			st.AssignedNode, st.MovingTo, st.Phase, st.LastJob = "", "", v1alpha1.RoutedIPRefused, nil
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v.Reason, v.Message
		} else {
			lastJob, msg := routedip.UserView(rec)
			st.AssignedNode, st.MovingTo, st.Phase, st.LastJob = rec.Node, rec.MovingTo, rec.Phase, lastJob
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, rec.Reason, msg
			if rec.Reason == v1alpha1.ReasonRoutedIPsAssigned {
				cond.Status = metav1.ConditionTrue
			}
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		if !equality.Semantic.DeepEqual(st, ri.Status) {
			pending = append(pending, statusWrite{ri: ri, status: st, refused: refused})
		}
	}
	writes, more := boundedWrites(pending)
	for _, w := range writes {
		old := w.ri.DeepCopy()
		w.ri.Status = w.status
		if err := cluster.Writer().Status().Patch(ctx, w.ri, client.MergeFrom(old)); err != nil && !apierrors.IsNotFound(err) {
			return more, clusteraccess.DescribeError("write RoutedIP "+w.ri.Name+"'s status", err)
		}
	}
	return more, nil
}

// recordUserEvent writes an Event about a RoutedIP in the user cluster, for kubectl describe.
func recordUserEvent(ctx context.Context, w client.Client, ri *v1alpha1.RoutedIP, typ, reason, msg string) {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ri.Namespace, GenerateName: ri.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RoutedIP", Namespace: ri.Namespace,
			Name: ri.Name, UID: ri.UID, ResourceVersion: ri.ResourceVersion},
		Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "shardgate"}, ReportingController: "shardgate.io/seed-controller", ReportingInstance: "shardgate",
	}
	if err := w.Create(ctx, ev); err != nil {
		d, _ := clusteraccess.Describe(err)
		log.FromContext(ctx).Info("could not record event", "routedIP", ri.Namespace+"/"+ri.Name, "error", d)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and taints only
	}
	return b
}
