package agent

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

// leaseSeconds is how long a node's report stays fresh; it is renewed every leaseSeconds/3, and
// at once when what it says changes.
const leaseSeconds = 6

// Reporter writes this node's report (vip.NodeReport) in its own Lease, and reads the peers'
// reports: what keepalived runs here and which VIPs are on the interface, observed, not assumed.
// One Lease per node, so two nodes holding one VIP both say so.
type Reporter struct {
	// NewClient builds the API client. A call that fails drops it and the next builds a new one
	// on a new connection: after the node's link flaps, a kept connection can stay dead for minutes.
	NewClient func() (kubernetes.Interface, error)
	Namespace string
	Shard     string
	Node      string

	mu     sync.Mutex // the agent's loop reads the peers while its sender reports
	client kubernetes.Interface
}

// ParseVIPs parses the VIP list Shardgate renders ("<address> <routerID>" per line).
func ParseVIPs(list string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			return nil, fmt.Errorf("vips: %q: %w", f[0], err)
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("vips: router ID %q: %w", f[1], err)
		}
		out = append(out, a)
	}
	return out, nil
}

func (r *Reporter) leases() (func(), error) {
	if r.client == nil {
		c, err := r.NewClient()
		if err != nil {
			return nil, err
		}
		r.client = c
	}
	return func() { r.client = nil }, nil
}

// Report renews this node's Lease with rep.
func (r *Reporter) Report(ctx context.Context, rep vip.NodeReport) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	drop, err := r.leases()
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := r.renew(ctx, rep); err != nil {
		drop()
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func (r *Reporter) renew(ctx context.Context, rep vip.NodeReport) error {
	leases := r.client.CoordinationV1().Leases(r.Namespace)
	name := names.VIPNodeLeaseName(r.Shard, r.Node)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels: names.RouterSelector(r.Shard), Annotations: rep.Annotations()},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(r.Node), LeaseDurationSeconds: ptr.To[int32](leaseSeconds),
				AcquireTime: &now, RenewTime: &now}}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Labels, l.Annotations = names.RouterSelector(r.Shard), rep.Annotations()
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != r.Node {
		l.Spec.HolderIdentity, l.Spec.AcquireTime = ptr.To(r.Node), &now
	}
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, ptr.To[int32](leaseSeconds)
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// Peers reads the reports of nodes (a node without a Lease has none).
func (r *Reporter) Peers(ctx context.Context, nodes []string) (map[string]vip.NodeReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	drop, err := r.leases()
	if err != nil {
		return nil, fmt.Errorf("read the peers' reports: %w", err)
	}
	out := map[string]vip.NodeReport{}
	for _, n := range nodes {
		l, err := r.client.CoordinationV1().Leases(r.Namespace).Get(ctx, names.VIPNodeLeaseName(r.Shard, n), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			drop()
			return nil, fmt.Errorf("read the peers' reports: %w", err)
		}
		if rep, ok := vip.ParseReport(l); ok {
			out[n] = rep
		}
	}
	return out, nil
}

// held lists which of vips are among the interface's addresses.
func held(onIface map[netip.Addr]bool, vips []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, v := range vips {
		if onIface[v] {
			out = append(out, v)
		}
	}
	return out
}
