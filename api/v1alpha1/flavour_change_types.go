package v1alpha1

// A shard's flavour changes in place (IngressProfile) only once it is safe: the allocation
// controller admits the change into status.shardFlavours when no route the shard serves would be
// dropped, moved or served unsafely by the new flavour's routers; until then the shard keeps its
// old flavour's routers (ClusterIngress.Shards) and FlavourChangesHeld names what holds it.

// ShardFlavour is the flavour a shard's routers run, as the allocation controller admitted it.
type ShardFlavour struct {
	// name of the shard (spec.shards[].name).
	Name string `json:"name"`
	// flavour its routers run: spec.shards[].flavour once a change is admitted, the old one
	// while it is held.
	Flavour Flavour `json:"flavour"`
	// image of its routers with that flavour (spec.shards[].image then; "" for the flavour's
	// default): a change's new image is for the new flavour, so a held change keeps the old one.
	// +optional
	Image string `json:"image,omitempty"`
}

// FlavourChangesHeld and its reasons: True while a shard's flavour change waits for the routes
// that block it (named in the message, with why); absent while every shard runs its spec's flavour.
const (
	ConditionFlavourChangesHeld = "FlavourChangesHeld"
	ReasonRoutesBlockChange     = "RoutesBlockChange"
	ReasonRoutesBeingMarked     = "RoutesBeingMarked"
	ReasonServicesUnreadable    = "ServicesUnreadable"
	ReasonFlavourUnavailable    = "FlavourUnavailable"
)

// KeptForAnnotation marks an Ingress its shard keeps although its class asks for another
// flavour's routers: it was on the shard when the shard's flavour changed to one whose routers
// select their routes by Shardgate's class annotation, whatever class a route names. The value is
// the flavour its class asked for then; a route whose class asks for another flavour since is no
// longer kept (naming a class is how a route leaves a shard). Only Shardgate may set it.
const KeptForAnnotation = "shardgate.io/kept-for"

// FlavourChange is a shard whose spec asks for another flavour than its routers run.
type FlavourChange struct {
	Shard    string
	From, To Flavour
	// FromImage is the image its routers run with From.
	FromImage string
}

// runningFlavours are the flavours spec.shards' routers run by shard name: status.shardFlavours,
// or, in a status from before it existed, the flavours status.shards reports (so that an upgrade
// does not take a change the CRD refused before as admitted). A shard in neither is new: its
// spec's flavour is what it runs.
// (A shard known only from status.shards runs its flavour's default image: status.shards has none.)
func (ci *ClusterIngress) runningFlavours() map[string]ShardFlavour {
	out := map[string]ShardFlavour{}
	for _, s := range ci.Status.ShardFlavours {
		out[s.Name] = s
	}
	if len(ci.Status.ShardFlavours) == 0 {
		for _, s := range ci.Status.Shards {
			if s.Flavour != "" {
				out[s.Name] = ShardFlavour{Name: s.Name, Flavour: Flavour(s.Flavour)}
			}
		}
	}
	return out
}

// FlavourChanges are the shards of spec whose flavour differs from the one their routers run, in
// spec order.
func (ci *ClusterIngress) FlavourChanges() []FlavourChange {
	running := ci.runningFlavours()
	var out []FlavourChange
	for _, s := range ci.Spec.ShardsOrDefault() {
		if from, ok := running[s.Name]; ok && from.Flavour != s.Flavour && s.Flavour != "" {
			out = append(out, FlavourChange{Shard: s.Name, From: from.Flavour, To: s.Flavour, FromImage: from.Image})
		}
	}
	return out
}

// runningShards are spec's shards with the flavour their routers run (a held change keeps the old
// one): what every controller renders, allocates and probes by.
func (ci *ClusterIngress) runningShards() []ShardSpec {
	out := ci.Spec.ShardsOrDefault()
	changes := ci.FlavourChanges()
	if len(changes) == 0 {
		return out
	}
	out = append([]ShardSpec(nil), out...)
	for _, c := range changes {
		for i := range out {
			if out[i].Name == c.Shard {
				out[i].Flavour, out[i].Image = c.From, c.FromImage
			}
		}
	}
	return out
}

// AllocationHeld: True while no route of the cluster is allocated because a route kind planned
// there before is not served now for a reason that may pass (Shardgate's role may not list it,
// its CRD is gone or too old): the hosts its routes hold are unknown meanwhile, and another
// namespace's route must not take them. Routes already allocated stay served. Absent otherwise;
// a kind turned off on purpose (the profile's gatewayAPI: Disabled) holds nothing.
const (
	ConditionAllocationHeld   = "AllocationHeld"
	ReasonPlannedKindUnserved = "PlannedKindUnserved"
)
