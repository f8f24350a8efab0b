package routerload

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/names"
)

// Reporter scrapes its router's metrics every Interval and renews the router's Lease with the
// load over Window every Renew. The Lease is owned by the router's pod, so it goes with the pod.
type Reporter struct {
	NewClient        func() (kubernetes.Interface, error)
	Namespace, Shard string
	Pod              string
	PodUID           types.UID
	MetricsURL       string
	Format           Format
	AdminEntryPoint  string
	Interval, Renew  time.Duration
	Window           time.Duration
	LeaseSeconds     int32
	HTTP             *http.Client

	client    kubernetes.Interface
	window    Window
	lastRenew time.Time
	// lease is the Lease as the last write returned it (nil: read it first).
	lease *coordinationv1.Lease
}

// Run reports until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	r.window.Span = r.Window
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if err := r.step(ctx, time.Now()); err != nil {
			log.Printf("load report: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Reporter) step(ctx context.Context, now time.Time) error {
	c, err := r.scrape(ctx, now)
	if err != nil {
		return err
	}
	r.window.Add(c)
	rep, ok := r.window.Report()
	if !ok || now.Sub(r.lastRenew) < r.Renew {
		return nil
	}
	if err := r.renew(ctx, rep, now); err != nil {
		r.client = nil // a new connection next time: a kept one can stay dead after a link flap
		return err
	}
	r.lastRenew = now
	return nil
}

func (r *Reporter) scrape(ctx context.Context, now time.Time) (Counters, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Interval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.MetricsURL, nil)
	if err != nil {
		return Counters{}, err
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return Counters{}, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Counters{}, fmt.Errorf("scrape: %s answered %s", r.MetricsURL, resp.Status)
	}
	return Parse(r.Format, resp.Body, r.AdminEntryPoint, now)
}

// renew writes the report: one update per renewal at steady state (the Lease the last write
// returned is updated; it is read again only after a failed write), so a router costs its API
// server one request per Renew.
func (r *Reporter) renew(ctx context.Context, rep Report, now time.Time) error {
	if r.client == nil {
		c, err := r.NewClient()
		if err != nil {
			return err
		}
		r.client = c
	}
	leases := r.client.CoordinationV1().Leases(r.Namespace)
	name := names.RouterLoadLeaseName(r.Shard, r.Pod)
	at := metav1.NewMicroTime(now)
	annotations := map[string]string{ReportAnnotation: rep.Annotation()}
	l := r.lease
	r.lease = nil
	if l == nil {
		var err error
		l, err = leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
				Labels: names.RouterSelector(r.Shard), Annotations: annotations,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: r.Pod, UID: r.PodUID}}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(r.Pod), LeaseDurationSeconds: ptr.To(r.LeaseSeconds),
					AcquireTime: &at, RenewTime: &at}}
			created, err := leases.Create(ctx, l, metav1.CreateOptions{})
			if err == nil {
				r.lease = created // client-go returns an empty object with an error
			}
			return err
		}
		if err != nil {
			return err
		}
	}
	l.Labels, l.Annotations = names.RouterSelector(r.Shard), annotations
	l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = ptr.To(r.Pod), &at, ptr.To(r.LeaseSeconds)
	updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	if err == nil {
		r.lease = updated
	}
	return err
}
