package agent

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// leaseSeconds is how long a holder report stays fresh; it is renewed every leaseSeconds/3.
const leaseSeconds = 6

// Reporter writes, for every VIP on this node's interface, the Lease naming this node as its
// holder: what Shardgate reports as observed (the address is on the interface), not assumed.
type Reporter struct {
	// NewClient builds the API client. A report that fails drops it and the next builds a new one
	// on a new connection: after the node's link flaps, a kept connection can stay dead for minutes.
	NewClient func() (kubernetes.Interface, error)
	Namespace string
	Shard     string
	Node      string

	client kubernetes.Interface
}

// ReadVIPs parses the VIP list Shardgate renders ("<address> <routerID>" per line).
func ReadVIPs(path string) ([]netip.Addr, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, line := range strings.Split(string(b), "\n") {
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

// Report renews the Lease of each held VIP.
func (r *Reporter) Report(ctx context.Context, held []netip.Addr) error {
	if len(held) == 0 {
		return nil
	}
	if r.client == nil {
		c, err := r.NewClient()
		if err != nil {
			return fmt.Errorf("report VIP holders: %w", err)
		}
		r.client = c
	}
	var errs []string
	for _, a := range held {
		if err := r.renew(ctx, a); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		r.client = nil
		return fmt.Errorf("report VIP holders: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (r *Reporter) renew(ctx context.Context, a netip.Addr) error {
	leases := r.client.CoordinationV1().Leases(r.Namespace)
	name := names.VIPLeaseName(r.Shard, a.String())
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels:      map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ShardLabel: r.Shard},
			Annotations: map[string]string{"shardgate.io/vip": a.String()}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(r.Node), LeaseDurationSeconds: ptr.To[int32](leaseSeconds),
				AcquireTime: &now, RenewTime: &now}}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != r.Node {
		l.Spec.HolderIdentity, l.Spec.AcquireTime = ptr.To(r.Node), &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, ptr.To[int32](leaseSeconds)
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// heldOn lists which of vips are on the interface.
func heldOn(iface string, vips []netip.Addr) []netip.Addr {
	onIface, err := interfaceAddrs(iface)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, v := range vips {
		if onIface[v] {
			out = append(out, v)
		}
	}
	return out
}
