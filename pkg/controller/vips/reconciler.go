package vips

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

// Reconciler allocates a cluster's VIPs within its L2 domain and reports who holds them.
type Reconciler struct {
	Client client.Client
	Access clusteraccess.Access
	Clock  clock.PassiveClock
	// Board takes status.vips and VIPsAvailable (cistatus.VIPs); the other members' latest
	// records are read through it too.
	Board *cistatus.Board
}

// Reconcile gathers the domain (every ClusterIngress in it, oldest first, and the addresses of
// its clusters' nodes), plans (pkg/vip), fills in holders from the cluster's Leases, and patches
// this cluster's status when it changed. A holder is re-checked when its Lease would expire.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Board.Overlay(ci)
	before := ci.Status.DeepCopy()
	if len(vipShards(ci)) == 0 {
		ci.Status.VIPs = nil
		meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionVIPsAvailable)
		r.Board.Post(ctx, ci, cistatus.VIPs)
		return ctrl.Result{}, nil
	}
	all := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, all); err != nil {
		return ctrl.Result{}, err
	}
	domain := ci.Spec.VIP.L2Domain
	var members []v1alpha1.ClusterIngress
	for _, o := range all.Items {
		r.Board.Overlay(&o)
		if o.Spec.VIP.L2Domain == domain && (len(vipShards(&o)) > 0 || len(o.Status.VIPs) > 0) {
			members = append(members, o)
		}
	}
	slices.SortFunc(members, func(a, b v1alpha1.ClusterIngress) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	requests := make([]vip.ClusterRequest, len(members))
	self := -1
	for i := range members {
		requests[i] = Request(&members[i], r.observable(&members[i]))
		if members[i].Namespace == ci.Namespace && members[i].Name == ci.Name {
			self = i
		}
	}
	plan := vip.Plan(requests, r.nodeAddresses(ctx, members))[self]
	if err := r.setHomes(ctx, ci, before.VIPs, plan.VIPs); err != nil {
		return ctrl.Result{}, err
	}
	split, recheck := r.fillHolders(ctx, ci, plan.VIPs)
	ci.Status.VIPs = plan.VIPs
	c := vip.Available(plan.VIPs, append(plan.Problems, split...))
	c.ObservedGeneration = ci.Generation
	meta.SetStatusCondition(&ci.Status.Conditions, c)
	if !sameAddresses(before.VIPs, plan.VIPs) {
		// An allocation is stored before anything acts on it (the shard controller renders
		// keepalived from the board): after a restart, a VIP known only to this replica's memory
		// could be planned for another cluster of the L2 domain.
		return ctrl.Result{RequeueAfter: recheck}, r.Board.Write(ctx, ci, cistatus.VIPs)
	}
	r.Board.Post(ctx, ci, cistatus.VIPs)
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// Request is what a cluster asks of its L2 domain: each VIP shard with its pool (the shard's
// own, else the profile's) and count, the profile's router IDs, and what its status holds. A
// cluster being deleted asks for nothing new and keeps what it holds until it is gone (its
// routers may still hold them); so does one whose nodes cannot be observed (yet): a new VIP
// could be an address its own nodes have, and a node's address never takes a held VIP away.
func Request(ci *v1alpha1.ClusterIngress, observable bool) vip.ClusterRequest {
	r := vip.ClusterRequest{Key: ci.Namespace + "/" + ci.Name, Held: ci.Status.VIPs}
	if !observable && ci.DeletionTimestamp == nil {
		r.Frozen = "waiting to read the cluster's nodes before allocating VIPs (see ClusterReachable)"
	}
	if ids := ci.Spec.VIP.RouterIDs; ids != nil {
		r.RouterIDs = vip.IDRange{First: int(ids.First), Last: int(ids.Last)}
	}
	for _, s := range vipShards(ci) {
		sr := vip.ShardRequest{Shard: s.Name, Count: 1}
		if s.VIP != nil {
			sr.Pool = s.VIP.Pool
			if s.VIP.Count > 0 {
				sr.Count = int(s.VIP.Count)
			}
		}
		if len(sr.Pool) == 0 {
			sr.Pool = ci.Spec.VIP.Pool
		}
		if ci.DeletionTimestamp != nil {
			sr.Count = 0
			for _, h := range ci.Status.VIPs {
				if h.Shard == s.Name {
					sr.Count = len(h.Addresses)
				}
			}
		}
		r.Shards = append(r.Shards, sr)
	}
	return r
}

func (r *Reconciler) observable(ci *v1alpha1.ClusterIngress) bool {
	cluster, ok := r.Access.Get(client.ObjectKeyFromObject(ci))
	return ok && cluster.Observable()
}

func vipShards(ci *v1alpha1.ClusterIngress) []v1alpha1.ShardSpec {
	var out []v1alpha1.ShardSpec
	for _, s := range ci.Spec.Shards {
		if s.Publishing == v1alpha1.PublishVIP {
			out = append(out, s)
		}
	}
	return out
}

// nodeAddresses are the addresses of the domain's clusters' nodes (from the clusters observable
// now) and whose node reports each: never given as a new VIP (vip.Plan).
func (r *Reconciler) nodeAddresses(ctx context.Context, members []v1alpha1.ClusterIngress) map[netip.Addr][]vip.NodeAddress {
	out := map[netip.Addr][]vip.NodeAddress{}
	for _, m := range members {
		if !r.observable(&m) {
			continue
		}
		cluster, _ := r.Access.Get(client.ObjectKeyFromObject(&m))
		nodes, err := cluster.Nodes(ctx)
		if err != nil {
			continue
		}
		for _, n := range nodes {
			for _, a := range n.Status.Addresses {
				if ip, err := netip.ParseAddr(a.Address); err == nil {
					out[ip.Unmap()] = append(out[ip.Unmap()], vip.NodeAddress{Cluster: m.Namespace + "/" + m.Name, Node: n.Name})
				}
			}
		}
	}
	return out
}

// setHomes records each VIP's home among the nodes running the shard's routers now (vip.Homes:
// sticky to the recorded home, spread). While the cluster cannot be observed, homes stay.
func (r *Reconciler) setHomes(ctx context.Context, ci *v1alpha1.ClusterIngress, before, vips []v1alpha1.ShardVIPs) error {
	recorded := map[string]string{}
	for _, s := range before {
		for _, a := range s.Addresses {
			recorded[s.Shard+"/"+a.Address] = a.Home
		}
	}
	cluster, ok := r.Access.Get(client.ObjectKeyFromObject(ci))
	observable := ok && cluster.Observable()
	for i := range vips {
		s := &vips[i]
		instances := make([]vip.Instance, len(s.Addresses))
		for j, a := range s.Addresses {
			instances[j] = vip.Instance{Home: recorded[s.Shard+"/"+a.Address]}
		}
		if !observable {
			for j := range s.Addresses {
				s.Addresses[j].Home = instances[j].Home
			}
			continue
		}
		pods := &corev1.PodList{}
		if err := cluster.Reader().List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector(s.Shard))); err != nil {
			return clusteraccess.DescribeError("read the user cluster's cache", err)
		}
		var nodes []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.HostIP != "" && !slices.Contains(nodes, p.Spec.NodeName) {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		slices.Sort(nodes)
		for j, h := range vip.Homes(instances, nodes) {
			s.Addresses[j].Home = h
		}
	}
	return nil
}

// fillHolders sets each VIP's holder from the agents' node Leases (fresh reports only, and only
// from a node of the cluster: a Lease is writable in the user cluster, its text is not to be
// repeated), returns a problem for each VIP two nodes report at once, and when the first fresh
// report would expire (0: none), to look again then.
func (r *Reconciler) fillHolders(ctx context.Context, ci *v1alpha1.ClusterIngress, vips []v1alpha1.ShardVIPs) ([]vip.Problem, time.Duration) {
	cluster, ok := r.Access.Get(client.ObjectKeyFromObject(ci))
	if !ok || !cluster.Observable() {
		return nil, 0
	}
	nodes, err := cluster.Nodes(ctx)
	if err != nil {
		return nil, 5 * time.Second
	}
	isNode := map[string]bool{}
	for _, n := range nodes {
		isNode[n.Name] = true
	}
	now := r.Clock.Now()
	var recheck time.Duration
	holders := map[string]map[netip.Addr][]string{}
	for _, s := range vips {
		leases := &coordinationv1.LeaseList{}
		if err := cluster.Reader().List(ctx, leases, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector(s.Shard))); err != nil {
			recheck = 5 * time.Second
			continue
		}
		var reports []vip.NodeReport
		for i := range leases.Items {
			rep, ok := vip.ParseReport(&leases.Items[i])
			// One report per node: the Lease named for it.
			if !ok || leases.Items[i].Name != names.VIPNodeLeaseName(s.Shard, rep.Node) {
				continue
			}
			reports = append(reports, rep)
			if left := rep.Expires.Sub(now); left > 0 && (recheck == 0 || left < recheck) {
				recheck = left
			}
		}
		holders[s.Shard] = vip.Holders(reports, func(n string) bool { return isNode[n] }, now)
	}
	return vip.FillHolders(vips, holders), recheck
}

// sameAddresses: a and b allocate the same addresses and router IDs to the same shards (homes
// and holders aside).
func sameAddresses(a, b []v1alpha1.ShardVIPs) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.ShardVIPs) bool {
		return x.Shard == y.Shard && slices.EqualFunc(x.Addresses, y.Addresses, func(p, q v1alpha1.VIPAddress) bool {
			return p.Address == q.Address && p.RouterID == q.RouterID
		})
	})
}
