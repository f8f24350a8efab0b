package gate

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrFenceLost refuses a write of a reconcile whose replica no longer holds the fence it was
// admitted under: another replica may be writing for that cluster (or cluster-scoped key) now.
var ErrFenceLost = errors.New("this replica no longer holds the fence of the cluster it writes for: write refused")

// token is what a reconcile admitted by Only writes under: its key's fence as claimed then.
type token struct {
	o     *Owner
	key   types.NamespacedName
	f     *fence
	rv    string          // the fence Lease's resourceVersion when admitted
	epoch context.Context // the epoch admitted in (ends with a lapse)
}

type tokenKey struct{}

// confirm checks, just before a write, that the reconcile's fence is still this replica's: held
// here (no lapse, no hand-over since), and — read fresh from the API server, which arbitrates
// the fence — still naming this replica at the same resourceVersion. The returned context ends
// when this replica would stop counting itself fresh: a write stuck before it leaves (in a
// client-side rate limiter, say) is dropped rather than sent late.
func (o *Owner) confirm(ctx context.Context, tok *token) (context.Context, context.CancelFunc, error) {
	if err := o.stillHeld(tok); err != nil {
		return nil, nil, err
	}
	reader := o.Checker
	if reader == nil {
		reader = o.Reader
	}
	l := &coordinationv1.Lease{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: fenceName(tok.key)}, l); err != nil {
		return nil, nil, fmt.Errorf("reading the fence before a write: %w", err)
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != o.Identity || l.ResourceVersion != tok.rv {
		o.mu.Lock()
		if tok.f.rv == tok.rv {
			tok.f.valid = false // the next request reads the fence again (acquire)
		}
		o.mu.Unlock()
		o.Log.Info("a write lost its fence: refused", "key", tok.key)
		return nil, nil, ErrFenceLost
	}
	// The read may have been slow: still fresh after it?
	if err := o.stillHeld(tok); err != nil {
		return nil, nil, err
	}
	o.mu.Lock()
	left := o.renewedAt.Add(o.LeaseDuration - o.Renew).Sub(o.now())
	o.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, left)
	return ctx, cancel, nil
}

// stillHeld: the fence tok was admitted under is still valid here, unchanged, in the same epoch,
// this replica counts itself fresh, and the key is still this replica's to serve (its owner or
// its group may have changed since the reconcile started: the new owner redoes the work).
func (o *Owner) stillHeld(tok *token) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopping || !o.fresh(o.now()) || tok.epoch.Err() != nil || tok.epoch != o.epoch || !tok.f.valid || tok.f.rv != tok.rv ||
		o.ownerKey(o.live, tok.key) != o.Identity {
		return ErrFenceLost
	}
	return nil
}

// Writes wraps c (the seed's client, or a user cluster's writer): every write made in a
// reconcile that Only admitted is sent only once confirm passed, and with its deadline. Other
// writes (one replica, or outside a gated reconcile) pass unchanged. The check costs one GET of
// a Lease per write.
func Writes(c client.Client) client.Client { return fencedClient{c} }

// fenced runs write under ctx's fence, if it has one.
func fenced(ctx context.Context, write func(context.Context) error) error {
	tok, _ := ctx.Value(tokenKey{}).(*token)
	if tok == nil {
		return write(ctx)
	}
	ctx, cancel, err := tok.o.confirm(ctx, tok)
	if errors.Is(err, ErrFenceLost) {
		refusedWrites.Inc()
	}
	if err != nil {
		return err
	}
	defer cancel()
	return write(ctx)
}

type fencedClient struct{ client.Client }

func (c fencedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return fenced(ctx, func(ctx context.Context) error { return c.Client.Apply(ctx, obj, opts...) })
}

func (c fencedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return fenced(ctx, func(ctx context.Context) error { return c.Client.Create(ctx, obj, opts...) })
}

func (c fencedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return fenced(ctx, func(ctx context.Context) error { return c.Client.Delete(ctx, obj, opts...) })
}

func (c fencedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return fenced(ctx, func(ctx context.Context) error { return c.Client.Update(ctx, obj, opts...) })
}

func (c fencedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return fenced(ctx, func(ctx context.Context) error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c fencedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return fenced(ctx, func(ctx context.Context) error { return c.Client.DeleteAllOf(ctx, obj, opts...) })
}

func (c fencedClient) Status() client.SubResourceWriter { return fencedSubResource{c.Client.Status()} }

func (c fencedClient) SubResource(sub string) client.SubResourceClient {
	s := c.Client.SubResource(sub)
	return struct {
		client.SubResourceReader
		fencedSubResource
	}{s, fencedSubResource{s}}
}

type fencedSubResource struct{ w client.SubResourceWriter }

func (s fencedSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return fenced(ctx, func(ctx context.Context) error { return s.w.Create(ctx, obj, sub, opts...) })
}

func (s fencedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return fenced(ctx, func(ctx context.Context) error { return s.w.Update(ctx, obj, opts...) })
}

func (s fencedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return fenced(ctx, func(ctx context.Context) error { return s.w.Patch(ctx, obj, patch, opts...) })
}

func (s fencedSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return fenced(ctx, func(ctx context.Context) error { return s.w.Apply(ctx, obj, opts...) })
}
