package dns

import (
	"context"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// refusingWrites is the seed API server refusing creates and updates of one DNSEndpoint while on
// is set (a restart of the API server, an admission webhook or quota outage, a DNSEndpoint grown
// past the request size limit by a cluster owner's nodes).
type refusingWrites struct {
	client.Client
	key types.NamespacedName
	on  *atomic.Bool
}

func (c refusingWrites) refuses(obj client.Object) bool {
	_, ok := obj.(*dnsrecords.DNSEndpoint)
	return ok && c.on.Load() && client.ObjectKeyFromObject(obj) == c.key
}

func (c refusingWrites) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if c.refuses(obj) {
		return apierrors.NewServiceUnavailable("the seed API server is restarting")
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c refusingWrites) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	if c.refuses(obj) {
		return apierrors.NewServiceUnavailable("the seed API server is restarting")
	}
	return c.Client.Patch(ctx, obj, p, opts...)
}
