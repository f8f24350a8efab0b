package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/replicas"
)

// Lease labels: which Leases are replicas' and which are clusters' fences.
const (
	LeaseKindLabel    = "shardgate.io/lease"
	leaseReplica      = "replica"
	leaseCluster      = "cluster"
	clusterAnnotation = "shardgate.io/cluster"
)

type verdict int

const (
	mine verdict = iota
	notMine
	waiting
)

// Owner is this replica's membership and the fences it holds.
type Owner struct {
	// Client writes Leases; Reader reads them uncached (they change every few seconds). Both
	// must have a rate limit of their own: renewals queued behind the controllers' writes would
	// let this replica's Lease lapse under load.
	Client client.Client
	Reader client.Reader
	// Identity of this replica (its pod name); Namespace of the Leases.
	Identity, Namespace string
	// LeaseDuration: a replica not renewed for this long is gone; Renew: how often it renews.
	LeaseDuration, Renew time.Duration
	// Keys lists every cluster key a controller may be asked for (ClusterIngresses and the
	// sources of clusters not created yet, from the cache), to tell the new owners when the live
	// set changes. On an error, the keys it did list are announced.
	Keys func(ctx context.Context) ([]types.NamespacedName, error)
	// OnRelease is called for a cluster this replica gave up, before its fence is released
	// (the engager disengages it).
	OnRelease func(types.NamespacedName)
	// OnAcquire is called when this replica takes a cluster's fence (again), before any reconcile
	// of it is admitted: what it remembers of the cluster from before (a lapse, another replica
	// serving it meanwhile) may be stale. Called with the Owner's lock held: it must not call
	// the Owner.
	OnAcquire func(types.NamespacedName)
	// Group places keys together: keys of one non-empty group are served by one replica (the
	// VIP clusters of one L2 domain, whose planner must see every member's nodes); "" (or no
	// Group) places a key by itself. It is called with mu held and must not call the Owner.
	Group func(types.NamespacedName) string
	// Checker reads a fence Lease before each fenced write (Writes); its own client, so that
	// writes never queue renewals behind them in a rate limiter. Default: Reader.
	Checker client.Reader
	Log     logr.Logger
	Now     func() time.Time

	mu        sync.Mutex
	epoch     context.Context // canceled when this replica's Lease lapses: in-flight work stops
	endEpoch  context.CancelFunc
	live      []string
	renewedAt time.Time                       // last successful renewal of our own Lease
	held      map[types.NamespacedName]*fence // fences held or being re-taken, with reconciles in flight
	stopping  bool                            // shutdown began: nothing enters
	observer  replicas.Observer               // when the replica Leases were seen to change
	subs      []chan event.GenericEvent
}

// watchdog cancels the running reconciles' contexts the moment this replica stops counting
// itself fresh — a renewal period before the others may count it gone — without waiting for a
// slow renewal to return.
func (o *Owner) watchdog(ctx context.Context) {
	t := time.NewTicker(o.Renew / 8)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o.mu.Lock()
		if !o.renewedAt.IsZero() && !o.fresh(o.now()) && o.epoch.Err() == nil {
			o.endEpoch()
		}
		o.mu.Unlock()
	}
}

// newEpoch starts a new epoch (mu held); the previous one's context is canceled.
func (o *Owner) newEpoch() {
	if o.endEpoch != nil {
		o.endEpoch()
	}
	o.epoch, o.endEpoch = context.WithCancel(context.Background())
}

// bound is ctx, also canceled when epoch ends.
func bound(ctx, epoch context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(epoch, cancel)
	return ctx, func() { stop(); cancel() }
}

// fence is a cluster this replica works for: valid while it holds the cluster's Lease (false
// after a lapse, until acquire has read the Lease again); busy while the Lease is being taken or
// given back (nobody enters meanwhile: what the API answers decides); inflight counts its
// reconciles running, which a lapse does not reset: the fence is given back only once they all
// ended.
type fence struct {
	valid, busy bool
	inflight    int
	// rv is the fence Lease's resourceVersion after this replica last claimed it: the token
	// every fenced write checks against a fresh read (any other holder's claim changes it).
	rv string
}

// NeedLeaderElection is false: every replica takes part.
func (o *Owner) NeedLeaderElection() bool { return false }

// Start renews this replica's Lease and follows the others' until ctx ends; then it gives every
// fence back and deletes its Lease, so the others take over at once instead of after expiry.
func (o *Owner) Start(ctx context.Context) error {
	o.mu.Lock()
	if o.held == nil {
		o.held = map[types.NamespacedName]*fence{}
	}
	o.newEpoch()
	o.mu.Unlock()
	go o.watchdog(ctx)
	// Renewals run on their own: following the others (lists, releases, announcements) can be
	// slow under load and must never delay them.
	lapses := make(chan bool, 1)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		t := time.NewTicker(o.Renew)
		defer t.Stop()
		for {
			lapsed := false
			select {
			case lapsed = <-lapses:
			default:
			}
			o.followTick(ctx, lapsed)
			select {
			case <-ctx.Done():
				return
			case lapsed = <-lapses:
				if lapsed {
					o.followTick(ctx, true)
				}
			case <-t.C:
			}
		}
	}()
	t := time.NewTicker(o.Renew)
	defer t.Stop()
	for {
		if o.renewTick(ctx) {
			select {
			case lapses <- true:
			default:
			}
		}
		select {
		case <-ctx.Done():
			<-followed
			o.shutdown()
			return nil
		case <-t.C:
		}
	}
}

// Live is the last live set seen (for metrics and tests).
func (o *Owner) Live() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.live)
}

// Held counts the user clusters this replica holds the fence of. Cluster-scoped keys (a
// profile, a routed-IP class) are fenced too but are no cluster: counted, they would hide a
// cluster no replica holds from the alert that compares the held with shardgate_clusters.
func (o *Owner) Held() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for key, f := range o.held {
		if f.valid && key.Namespace != "" {
			n++
		}
	}
	return n
}

// Holds says whether this replica holds the key's fence (the cluster metrics count the
// ClusterIngresses a replica owns with it).
func (o *Owner) Holds(key types.NamespacedName) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.held[key]
	return f != nil && f.valid
}

// tick renews, then follows the others (tests call it to step time by hand).
func (o *Owner) tick(ctx context.Context) {
	lapsed := o.renewTick(ctx)
	o.followTick(ctx, lapsed)
}

// renewTick renews this replica's Lease and reports whether it lapsed meanwhile.
func (o *Owner) renewTick(ctx context.Context) bool {
	now := o.now()
	o.mu.Lock()
	prev := o.renewedAt
	o.mu.Unlock()
	err := o.renew(ctx, now)
	landed := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	// Others count this replica live until its last renewTime plus the duration; it counts
	// itself fresh a renewal period less. If this renewal landed (or failed) after that, there
	// was a moment when another replica could rightly take our fences: forget them all, stop
	// what runs for them, and take each again only through acquire, which reads who holds it.
	lapsed := !prev.IsZero() && landed.Sub(prev) >= o.LeaseDuration-o.Renew && o.anyValid()
	if lapsed {
		o.Log.Info("this replica's Lease lapsed: forgetting the fences it held", "clusters", len(o.held), "lastRenewal", prev, "now", landed)
		for _, f := range o.held {
			f.valid = false
		}
		o.newEpoch()
	}
	if err != nil {
		o.Log.Error(err, "renewing the replica Lease")
		return lapsed
	}
	o.renewedAt = now
	if o.epoch == nil || o.epoch.Err() != nil {
		o.newEpoch() // the first, or the watchdog ended the last one
	}
	return lapsed
}

// anyValid: some fence is held valid (mu held). After a lapse none is, until taken again.
func (o *Owner) anyValid() bool {
	for _, f := range o.held {
		if f.valid {
			return true
		}
	}
	return false
}

// followTick reads the live replicas, tells the controllers when owners changed (or after a
// lapse), and gives back the clusters others now serve.
func (o *Owner) followTick(ctx context.Context, lapsed bool) {
	var leases coordinationv1.LeaseList
	if err := o.Reader.List(ctx, &leases, client.InNamespace(o.Namespace), client.MatchingLabels{LeaseKindLabel: leaseReplica}); err != nil {
		o.Log.Error(err, "listing replica Leases")
		return
	}
	// A renewal in this list may have landed at any moment until the list returned: dated now,
	// it is never dated earlier than it happened (a slow list must not make a replica seem to
	// have renewed earlier, and so expire earlier, than it counts itself fresh).
	now := o.now()
	o.mu.Lock()
	o.observer.Observe(leases.Items, now)
	live := o.observer.Live(leases.Items, now)
	changed := !slices.Equal(live, o.live)
	o.live = live
	o.mu.Unlock()
	if changed {
		o.Log.Info("replicas", "live", live)
	}
	if changed || lapsed {
		// The new owners start at once; after a lapse we take ours again through the fences.
		o.announce(ctx)
	}
	o.releaseLost(ctx)
	liveReplicas.Set(float64(len(live)))
	heldClusters.Set(float64(o.Held()))
}

// renew creates or renews this replica's Lease.
func (o *Owner) renew(ctx context.Context, now time.Time) error {
	l := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: o.Namespace, Name: "shardgate-replica-" + o.Identity}
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(o.Identity), LeaseDurationSeconds: ptr.To(int32(o.LeaseDuration / time.Second)),
		RenewTime: &metav1.MicroTime{Time: now}}
	err := o.Reader.Get(ctx, key, l)
	if apierrors.IsNotFound(err) {
		spec.AcquireTime = &metav1.MicroTime{Time: now}
		return o.Client.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{LeaseKindLabel: leaseReplica, v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}}, Spec: spec})
	}
	if err != nil {
		return err
	}
	spec.AcquireTime = l.Spec.AcquireTime
	l.Spec = spec
	return o.Client.Update(ctx, l)
}

// fresh: our own Lease was renewed recently enough that no other replica can consider us gone
// (a renewal period of margin).
func (o *Owner) fresh(now time.Time) bool {
	return !o.renewedAt.IsZero() && now.Sub(o.renewedAt) < o.LeaseDuration-o.Renew
}

// enter decides a request: not ours, ours (with the fence held: the returned context ends with
// the epoch the fence was checked in, and done must be called after), or ours but the fence is
// not free yet. Ownership and freshness are checked again after the Lease was read, under the
// same lock releaseLost takes: a fence given back meanwhile, or a lapse, is never entered.
func (o *Owner) enter(ctx context.Context, key types.NamespacedName) (context.Context, func(), verdict) {
	o.mu.Lock()
	now := o.now()
	if o.stopping || !o.fresh(now) || !slices.Contains(o.live, o.Identity) {
		// We may no longer count as live: do nothing until renewed. Or our renewal is not in the
		// last list yet (the first list may come before our first renewal): who serves what
		// is not known yet, so the request is kept rather than dropped as another's.
		o.mu.Unlock()
		return nil, nil, waiting
	}
	if o.ownerKey(o.live, key) != o.Identity {
		o.mu.Unlock()
		return nil, nil, notMine
	}
	// Cluster-scoped keys (a routed-IP class's firewall, a profile) are fenced like clusters:
	// during a membership change two replicas must not both run one.
	f, ok := o.held[key]
	switch {
	case ok && f.busy:
		o.mu.Unlock()
		return nil, nil, waiting
	case ok && f.valid:
		return o.admit(ctx, key, f) // unlocks
	case !ok:
		f = &fence{}
		o.held[key] = f
	}
	f.busy = true
	epoch, live := o.epoch, slices.Clone(o.live)
	o.mu.Unlock()

	rv, acquired, err := o.acquire(ctx, key, live, now)

	o.mu.Lock()
	f.busy = false
	if acquired {
		f.rv = rv
	}
	if err != nil || !acquired {
		if !f.valid && f.inflight == 0 {
			delete(o.held, key)
		}
		o.mu.Unlock()
		if err != nil {
			o.Log.Error(err, "acquiring the cluster's Lease", "cluster", key)
		}
		return nil, nil, waiting
	}
	// We hold the Lease. It is valid only if no lapse happened while we read it (a lapse ends the
	// epoch; the next enter reads the Lease again).
	f.valid = o.epoch == epoch && epoch.Err() == nil
	if !f.valid || o.stopping || !o.fresh(o.now()) || o.ownerKey(o.live, key) != o.Identity {
		// Held but not to be used now: releaseLost gives it back if another replica serves it.
		o.mu.Unlock()
		return nil, nil, waiting
	}
	if o.OnAcquire != nil {
		o.OnAcquire(key)
	}
	return o.admit(ctx, key, f)
}

// admit counts a reconcile in for a valid fence (mu held; it unlocks). Its context carries the
// fence's token, which Writes checks before each write.
func (o *Owner) admit(ctx context.Context, key types.NamespacedName, f *fence) (context.Context, func(), verdict) {
	f.inflight++
	epoch := o.epoch
	tok := &token{o: o, key: key, f: f, rv: f.rv, epoch: epoch}
	o.mu.Unlock()
	ctx, stop := bound(context.WithValue(ctx, tokenKey{}, tok), epoch)
	return ctx, func() {
		stop()
		o.mu.Lock()
		if f.inflight > 0 {
			f.inflight--
		}
		o.mu.Unlock()
	}, mine
}

// acquire takes the cluster's fence when it is free: never created, released, held by us, or
// held by a replica that is not live any more. It returns the fence Lease's resourceVersion
// after our claim.
func (o *Owner) acquire(ctx context.Context, key types.NamespacedName, live []string, now time.Time) (string, bool, error) {
	name := fenceName(key)
	l := &coordinationv1.Lease{}
	err := o.Reader.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: name}, l)
	if apierrors.IsNotFound(err) {
		created := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name,
			Labels:      map[string]string{LeaseKindLabel: leaseCluster, v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue},
			Annotations: map[string]string{clusterAnnotation: key.String()}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(o.Identity), AcquireTime: &metav1.MicroTime{Time: now}}}
		err = o.Client.Create(ctx, created)
		if apierrors.IsAlreadyExists(err) {
			return "", false, nil // another replica created it first: look again next time
		}
		return created.ResourceVersion, err == nil, err
	}
	if err != nil {
		return "", false, err
	}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	switch {
	case holder == o.Identity:
		// Still ours as far as this read goes, but a replica that counted us gone (our Lease
		// lapsed) may be taking it right now: claim it again with a write, which the API server
		// orders against theirs by resourceVersion — one of the two fails.
	case holder != "" && slices.Contains(live, holder):
		return "", false, nil // its holder is live and has not released it yet
	case holder != "":
		// Our view of the live replicas may be older than the fence we just read (a replica that
		// started after our last list already holds it): ask the holder's own Lease.
		alive, err := o.replicaAlive(ctx, holder)
		if err != nil || alive {
			return "", false, err
		}
	}
	// Free, ours, or its holder is gone. The update carries the resourceVersion read: of two
	// replicas racing for it, one wins.
	if holder != o.Identity {
		l.Spec.HolderIdentity = ptr.To(o.Identity)
		l.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if err := o.Client.Update(ctx, l); err != nil {
		if apierrors.IsConflict(err) {
			return "", false, nil
		}
		return "", false, err
	}
	if holder != "" && holder != o.Identity {
		o.Log.Info("took over a cluster whose replica is gone", "cluster", key, "from", holder)
	}
	return l.ResourceVersion, true, nil
}

// replicaAlive reads holder's Lease now: a fence is taken from a replica only when its own Lease
// says it is gone.
func (o *Owner) replicaAlive(ctx context.Context, holder string) (bool, error) {
	l := &coordinationv1.Lease{}
	err := o.Reader.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: "shardgate-replica-" + holder}, l)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.observer.Alive(l, o.now()), nil // dated after the read returned, like a list
}

// releaseLost gives back the fences of clusters another replica now serves, once no reconcile
// of ours for them is running. The fence stays busy until the API has answered: enter neither
// admits nor re-takes it meanwhile.
func (o *Owner) releaseLost(ctx context.Context) {
	o.mu.Lock()
	var lost []types.NamespacedName
	for key, f := range o.held {
		if f.inflight == 0 && !f.busy && o.ownerKey(o.live, key) != o.Identity {
			lost = append(lost, key)
			f.busy, f.valid = true, false
		}
	}
	o.mu.Unlock()
	for _, key := range lost {
		if o.OnRelease != nil {
			o.OnRelease(key)
		}
		err := o.release(ctx, key)
		o.mu.Lock()
		if err == nil {
			delete(o.held, key)
		} else {
			if f := o.held[key]; f != nil {
				f.busy = false // tried again next tick; enter reads the Lease first
			}
		}
		o.mu.Unlock()
		if err != nil {
			o.Log.Error(err, "releasing the cluster's Lease (its new owner takes it when this replica's Lease expires)", "cluster", key)
		}
	}
}

func (o *Owner) release(ctx context.Context, key types.NamespacedName) error {
	l := &coordinationv1.Lease{}
	if err := o.Reader.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: fenceName(key)}, l); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != o.Identity {
		return nil
	}
	l.Spec.HolderIdentity = ptr.To("")
	return o.Client.Update(ctx, l)
}

// shutdown gives back every fence once its reconciles have ended (the manager is stopping them)
// and then deletes this replica's Lease: a clean stop hands over at once. A fence whose reconcile
// outlives the five seconds is kept, and so is the replica's Lease: the others take those
// clusters only when it expires, never while a write of ours may still land.
func (o *Owner) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o.mu.Lock()
	o.stopping = true
	o.mu.Unlock()
	kept := 0
	for {
		o.mu.Lock()
		var idle []types.NamespacedName
		busy := 0
		for k, f := range o.held {
			if f.inflight == 0 && !f.busy {
				idle = append(idle, k)
				delete(o.held, k)
			} else {
				busy++
			}
		}
		o.mu.Unlock()
		for _, k := range idle {
			if err := o.release(ctx, k); err != nil {
				kept++
			}
		}
		if busy == 0 {
			break
		}
		select {
		case <-ctx.Done():
			kept += busy
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	if kept > 0 {
		o.Log.Info("stopping with fences not given back: they pass on when this replica's Lease expires", "clusters", kept)
		return
	}
	_ = o.Client.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: "shardgate-replica-" + o.Identity}})
}

// announce sends every cluster (and the cluster-scoped objects are re-listed by their own
// controllers' resyncs) to the subscribed controllers: the new owners start on theirs.
func (o *Owner) announce(ctx context.Context) {
	if o.Keys == nil {
		return
	}
	keys, err := o.Keys(ctx)
	if err != nil { // the keys that could be listed are announced all the same
		o.Log.Error(err, "listing clusters to hand over", "listed", len(keys))
	}
	o.mu.Lock()
	subs := slices.Clone(o.subs)
	o.mu.Unlock()
	for _, k := range keys {
		ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		for _, c := range subs {
			select {
			case c <- event.GenericEvent{Object: ci}:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (o *Owner) subscribe() chan event.GenericEvent {
	c := make(chan event.GenericEvent, 1024)
	o.mu.Lock()
	o.subs = append(o.subs, c)
	o.mu.Unlock()
	return c
}

func (o *Owner) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// ownerKey is the replica of live that serves k: the one its group hashes to, if it has one.
func (o *Owner) ownerKey(live []string, k types.NamespacedName) string {
	if o.Group != nil {
		if g := o.Group(k); g != "" {
			return replicas.Owner(live, "group/"+g)
		}
	}
	return replicas.Owner(live, keyString(k))
}

func keyString(k types.NamespacedName) string {
	if k.Namespace == "" {
		return "cluster-scoped/" + k.Name
	}
	return k.String()
}

// fenceName is the cluster's Lease: a hash, since namespace/name may exceed a name's length.
func fenceName(k types.NamespacedName) string {
	sum := sha256.Sum256([]byte(k.String()))
	return fmt.Sprintf("shardgate-cluster-%s", hex.EncodeToString(sum[:8]))
}
