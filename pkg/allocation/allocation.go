package allocation

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shardgate/shardgate/pkg/names"
)

// Shard is a shard as the allocation planner sees it.
type Shard struct {
	Name, Domain string
	// NamespaceSelector and RouteSelector filter which Ingresses may land here (nil: all).
	NamespaceSelector, RouteSelector labels.Selector
	// Capacity is the shard's ready routers, for LeastLoaded.
	Capacity int
	// Utilization is the load its routers report against its capacity, in percent, for
	// LeastUtilized; meaningful only with LoadKnown.
	Utilization int32
	LoadKnown   bool
	// RequestsPerSecond its routers report, CapacityRPS one router's capacity (with LoadKnown).
	RequestsPerSecond int64
	CapacityRPS       int32
	// Labels are the shard's (ShardSpec.Labels).
	Labels map[string]string
	// Claim is the IngressClaim (namespace/name) a claimed shard serves: it takes only the
	// Ingresses pinned to it, never one the planner would choose.
	Claim string
	// Flavour is the kind of router the shard runs: it takes only the routes whose class asks for
	// that flavour (a router serves only its own flavour's class). "": any.
	Flavour string
	// RouteClass is the ingress.class its routers select their routes by (the flavour's shard
	// filter), written on every route allocated here; "" when they select by the shard label.
	RouteClass string
	// SharesRouteSpecs: its routers put parts of a route's spec into configuration every route
	// shares; a route with a Refusal is refused here.
	SharesRouteSpecs bool
	// ReadsAnnotations are the annotation names (under any prefix) its routers read from a route
	// as configuration every route shares: a route carrying one is refused here. The admission
	// policy refuses them on writes; this catches those set before it existed (a route that named
	// the flavour's class before the cluster had a shard of it).
	ReadsAnnotations []string
	// ChangingTo is the flavour a held change of the shard's flavour will give it. Where that
	// flavour's routers select their routes by Shardgate's class annotation (ChangingRouteClass),
	// the Ingresses it serves now whose class asks for another flavour are marked
	// (Allocation.KeptFor) so that it keeps them once the change is admitted; where its own routers
	// do, it keeps the Ingresses on it that name ChangingTo's class (their tenants preparing for
	// the change), which its routers serve whatever class they name.
	ChangingTo string
	// ChangingRouteClass is the class ChangingTo's routers will select the shard's routes by: the
	// Ingresses it serves carry it before they start (RouteClass' routers ignore it), so that none
	// is unselected when they do.
	ChangingRouteClass string
	// ChangingSharesRouteSpecs: ChangingTo's routers share route specs, so the Ingresses it serves
	// lose what those would share (a converted default backend) before they start.
	ChangingSharesRouteSpecs bool
	// OwnRouteClass is the class routers of this shard's would select by, whatever its flavour now: a
	// route on the shard that carries it keeps it (after a change from such a flavour, those
	// routers may still run until they have rolled; no other shard's routers read it).
	OwnRouteClass string
}

// Route is a route of any kind (an Ingress) as the planner sees it.
type Route struct {
	// Kind is the route's kind ("Ingress"): routes of every kind are planned together, so that a
	// host has one owner whatever kind asks for it; the planner only hands it back.
	Kind            string
	Namespace, Name string
	Labels          map[string]string
	NamespaceLabels map[string]string
	// Hosts has one entry per rule; "" for a rule without a host.
	Hosts []string
	// Shard is the current allocation ("" for a new Ingress).
	Shard string
	// HeldHosts are the hosts Shardgate allocated to it before (its shardgate.io/hosts
	// annotation, which only Shardgate can write): the claims it holds.
	HeldHosts []string
	Created   time.Time
	// Pin is the claimed shard an IngressClaim binds the Ingress to ("" for none).
	Pin string
	// Flavour is the router flavour the route's class asks for (Shard.Flavour). "": any.
	Flavour string
	// Refusal is why the route's own spec cannot be served by routers that share route specs
	// (Kind.Refusal): it is refused with that reason on such shards (Shard.SharesRouteSpecs).
	Refusal string
	// ClassAnnotated: the route has an ingress.class annotation of its own, under any prefix (the
	// legacy kubernetes.io/ingress.class among them), which routers that select by class
	// annotation (Shard.RouteClass) would read as their shard filter beside Shardgate's: such a
	// shard refuses it.
	ClassAnnotated bool
	// Annotations are the names of the route's annotations (Shard.ReadsAnnotations).
	Annotations []string
	// SelectableByClass: routers that select their routes by Shardgate's class annotation
	// (Shard.RouteClass) serve this route whatever class it names (an Ingress).
	SelectableByClass bool
	// KeptFor is its kept-for mark (v1alpha1.KeptForAnnotation): the flavour its class asked for
	// when its shard's flavour changed under it. Its shard keeps it while its class still asks for
	// that flavour.
	KeptFor string
	// RouteClass is the shard class annotation it carries (v1alpha1.ShardClassAnnotation).
	RouteClass string
}

// Config is the cluster-wide allocation policy.
type Config struct {
	// ClusterDomain is <clusterid>.<zone>; Zone is the parent zone shared with other clusters.
	ClusterDomain, Zone string
	Strategy            Strategy
	// InterNamespace lets several namespaces serve the same host (default: the first claims it).
	InterNamespace bool
	// AllowWildcards accepts hosts like *.example.org.
	AllowWildcards bool
}

// Allocation is the planner's decision for one route.
type Allocation struct {
	// Kind, Namespace and Name are the route's (Route.Kind).
	Kind            string
	Namespace, Name string
	Shard           string
	// Domain is the shard's domain apex: the Ingress' address and its CNAME target.
	Domain string
	// Hosts are the final hosts, one per rule (default hosts filled in).
	Hosts []string
	// CNAMETarget is the name a custom host must CNAME to (the shard's domain apex); empty when
	// every host is under the cluster domain.
	CNAMETarget string
	// RouteClass and SharesRouteSpecs are the shard's (Shard).
	RouteClass       string
	SharesRouteSpecs bool
	// KeptFor is the kept-for mark to write (Route.KeptFor): set while its shard keeps it for a
	// flavour change, "" otherwise.
	KeptFor  string
	Rejected bool
	Reason   string
	// MovedFrom is set when the Ingress left a shard; MoveReason says why.
	MovedFrom, MoveReason string
}

// PlanAllocations decides every Ingress' shard and hosts.
//
// An Ingress an IngressClaim binds (Pin) goes to the claim's shard, moving if it must; claimed
// shards take no other Ingress, and an Ingress they no longer bind moves back to the others.
//
// Hosts belong to their first claimant: the hosts an allocated Ingress holds (HeldHosts) are
// recorded before any decision, so an Ingress edited to another namespace's host is refused
// however old it is, and the holder keeps serving. Allocations are sticky (clients cache DNS):
// an Ingress moves only when its shard is removed or when its hosts now name another shard's
// domain (the name resolves to that shard; staying would 404). New Ingresses are decided in
// creation order.
func PlanAllocations(cfg Config, shards []Shard, routes []Route) []Allocation {
	p := newPlanner(cfg, shards, routes)
	// Allocated routes first (their claims predate any new decision), then by age. The sort
	// works on pointers with the "allocated" bit worked out once: a pass over 10,000 Ingresses
	// must not look shards up or copy routes in every comparison.
	type entry struct {
		r      *Route
		sticky bool
	}
	order := make([]entry, len(routes))
	for i := range routes {
		order[i] = entry{r: &routes[i], sticky: routes[i].Shard != "" && p.byName[routes[i].Shard] != nil}
	}
	slices.SortFunc(order, func(x, y entry) int {
		if x.sticky != y.sticky {
			if x.sticky {
				return -1
			}
			return 1
		}
		return compareAge(x.r, y.r)
	})
	out := make([]Allocation, 0, len(order))
	for _, e := range order {
		a := p.allocate(*e.r)
		if !a.Rejected {
			p.load[a.Shard]++
			p.allocated++
			for _, h := range a.Hosts {
				if _, ok := p.owner[h]; !ok {
					p.owner[h] = e.r.Namespace
				}
				if _, ok := p.hostShard[h]; !ok && a.CNAMETarget != "" && !InDomain(h, cfg.ClusterDomain) {
					p.hostShard[h] = a.Shard
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func compareAge(a, b *Route) int {
	return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
		strings.Compare(a.Kind, b.Kind))
}

type planner struct {
	cfg    Config
	shards []Shard
	byName map[string]*Shard
	load   map[string]int
	// owner is host -> namespace: held claims first, then each decision's.
	owner map[string]string
	// hostShard is custom host -> the shard its CNAME target names: held claims first, then each
	// decision's. A new route for a host that is already served goes to the same shard, so an
	// Ingress and an HTTPRoute (or two Ingresses) for one host share the CNAME target.
	hostShard map[string]string
	// defaultLabels maps the default host label of every Ingress to it, so that no one can
	// claim another Ingress' default host (names.DefaultHostOwner covers Ingresses to come).
	defaultLabels map[string]string
	allocated     int
}

func newPlanner(cfg Config, shards []Shard, routes []Route) *planner {
	p := &planner{cfg: cfg, shards: slices.Clone(shards), byName: map[string]*Shard{}, load: map[string]int{},
		owner: map[string]string{}, hostShard: map[string]string{}, defaultLabels: map[string]string{}}
	slices.SortFunc(p.shards, func(a, b Shard) int { return strings.Compare(a.Name, b.Name) })
	for i := range p.shards {
		p.byName[p.shards[i].Name] = &p.shards[i]
	}
	holders := make([]*Route, 0, len(routes))
	for i := range routes {
		r := &routes[i]
		if strings.Contains(r.Name, ".") { // the others are recognised by their hash alone
			if l, ok := names.DefaultHostLabel(r.Namespace, r.Name); ok {
				p.defaultLabels[l] = r.Namespace + "/" + r.Name
			}
		}
		if r.Shard != "" && len(r.HeldHosts) > 0 {
			holders = append(holders, r)
		}
	}
	// Held claims, oldest first where two namespaces hold one host (possible only after
	// InterNamespaceAllowed was turned off): the older keeps it.
	slices.SortFunc(holders, compareAge)
	for _, r := range holders {
		inSpec := map[string]bool{}
		for _, h := range r.Hosts {
			inSpec[normalizeHost(h)] = true
		}
		for _, h := range r.HeldHosts {
			if _, taken := p.owner[h]; !taken && inSpec[h] {
				p.owner[h] = r.Namespace // still in the spec: still claimed
			}
			if _, placed := p.hostShard[h]; !placed && inSpec[h] && !InDomain(h, cfg.ClusterDomain) && p.byName[r.Shard] != nil {
				p.hostShard[h] = r.Shard
			}
		}
	}
	return p
}

func (p *planner) allocate(r Route) Allocation {
	cfg := p.cfg
	a := Allocation{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	reject := func(format string, args ...any) Allocation {
		a.Rejected, a.Reason, a.Shard, a.Domain, a.Hosts, a.MovedFrom, a.MoveReason = true, fmt.Sprintf(format, args...), "", "", nil, "", ""
		a.RouteClass, a.SharesRouteSpecs = "", false
		return a
	}
	if len(r.Hosts) == 0 {
		r.Hosts = []string{""} // an Ingress with only a default backend gets one default host
	}
	ownLabel, ownLabelOK := names.DefaultHostLabel(r.Namespace, r.Name)
	// Hosts fix the shard when they are under a shard's domain. A default host Shardgate wrote
	// earlier (its label is the Ingress' own) fixes nothing: it is re-derived below, which
	// rewrites it after a zone, cluster ID or shard change.
	hosts := make([]string, len(r.Hosts))
	forced, custom := "", false
	for i, h := range r.Hosts {
		if h == "" || p.ownDefaultHost(h, r, ownLabel) {
			continue
		}
		norm, err := ValidateHost(h, cfg)
		if err != nil {
			return reject("%v", err)
		}
		hosts[i] = norm
		if !InDomain(norm, cfg.ClusterDomain) {
			custom = true
			continue
		}
		s := shardOfHost(norm, p.shards)
		if s == nil {
			return reject("host %s is under the cluster domain but under no shard's domain", norm)
		}
		if !keeps(s, r) {
			return reject("host %s is under shard %s's domain, whose routers are %s; its class asks for %s routers",
				norm, s.Name, s.Flavour, r.Flavour)
		}
		if err := p.checkShardName(norm, s, r); err != nil {
			return reject("%v", err)
		}
		if forced != "" && forced != s.Name {
			return reject("hosts are under two shards' domains (%s and %s); split the Ingress", forced, s.Name)
		}
		forced = s.Name
	}
	cur := p.byName[r.Shard]
	if cur != nil && cur.Claim != "" && r.Pin != cur.Name {
		cur = nil // a claimed shard keeps only what its claim binds
	}
	if cur != nil && !keeps(cur, r) {
		cur = nil // the route names another flavour's class now: its routers no longer serve it
	}
	switch {
	case r.Pin != "":
		// Bound by a claim, the one exception to stickiness: the user asked for it.
		pin := p.byName[r.Pin]
		if pin == nil {
			return reject("IngressClaim binds it to shard %s, which does not exist yet", r.Pin)
		}
		if forced != "" && forced != pin.Name {
			return reject("IngressClaim %s binds it to shard %s, but its host is under shard %s's domain; use a host under %s or your own", pin.Claim, pin.Name, forced, pin.Domain)
		}
		if !serves(pin, r) {
			return reject("IngressClaim %s binds it to shard %s, whose routers are %s; the route asks for %s routers: "+
				"a claim serves the routes that ask for its routers (its status.flavour, status.ingressClassName)", pin.Claim, pin.Name, pin.Flavour, r.Flavour)
		}
		a.Shard = pin.Name
		if r.Shard != "" && r.Shard != pin.Name {
			a.MovedFrom, a.MoveReason = r.Shard, fmt.Sprintf("IngressClaim %s binds it to its own shard", pin.Claim)
		}
	case cur != nil && (forced == "" || forced == cur.Name):
		a.Shard = cur.Name // sticky
	default:
		if r.Shard != "" {
			a.MovedFrom = r.Shard
			a.MoveReason = fmt.Sprintf("shard %s was removed", r.Shard)
			if old := p.byName[r.Shard]; old != nil && old.Claim != "" {
				a.MoveReason = fmt.Sprintf("IngressClaim %s no longer binds it", old.Claim)
			} else if old != nil && !serves(old, r) {
				a.MoveReason = fmt.Sprintf("its class asks for %s routers now; shard %s's are %s", r.Flavour, r.Shard, old.Flavour)
			} else if cur != nil {
				a.MoveReason = fmt.Sprintf("its host is under shard %s's domain, which DNS sends to that shard", forced)
			}
		}
		cands := p.candidates(r, forced)
		switch {
		case len(cands) == 0 && forced != "" && p.byName[forced].Claim != "":
			return reject("its host is under shard %s's domain, which IngressClaim %s holds for the Ingresses it names", forced, p.byName[forced].Claim)
		case len(cands) == 0 && forced != "":
			return reject("its host is under shard %s's domain, but that shard does not accept this namespace or route", forced)
		case len(cands) == 0 && !p.anyServes(r):
			return reject("no shard has %s routers, which its class asks for", r.Flavour)
		case len(cands) == 0:
			return reject("no shard accepts this Ingress (namespace and route selectors)")
		}
		a.Shard = p.customHostsShard(hosts, cands)
		if a.Shard == "" {
			a.Shard = cfg.Strategy.Pick(r, cands)
		}
	}
	shard := p.byName[a.Shard]
	if shard.SharesRouteSpecs && r.Refusal != "" {
		return reject("shard %s's %s routers share route specs between tenants: %s", shard.Name, shard.Flavour, r.Refusal)
	}
	if name := readAnnotation(shard.ReadsAnnotations, r.Annotations); name != "" {
		return reject("shard %s's %s routers read annotation %s as configuration every tenant's routes share; remove it",
			shard.Name, shard.Flavour, name)
	}
	if shard.RouteClass != "" && r.ClassAnnotated {
		return reject("shard %s's %s routers select their routes by an ingress.class annotation, which the route's "+
			"own ingress.class annotation would contradict; remove it and name the class in spec.ingressClassName",
			shard.Name, shard.Flavour)
	}
	domain := shard.Domain
	a.Domain, a.RouteClass, a.SharesRouteSpecs = domain, shard.RouteClass, shard.SharesRouteSpecs
	a.KeptFor = keptFor(shard, r)
	switch {
	case shard.ChangingRouteClass != "" && r.SelectableByClass:
		a.RouteClass, a.SharesRouteSpecs = shard.ChangingRouteClass, shard.ChangingSharesRouteSpecs
	case a.RouteClass == "" && r.Shard == shard.Name && r.RouteClass != "" && r.RouteClass == shard.OwnRouteClass:
		a.RouteClass = r.RouteClass // a change set back: the shard's HAProxy routers may not have rolled yet
	}
	for _, h := range hosts {
		if h == "" {
			if !ownLabelOK {
				return reject("its default host label %q is longer than 63 characters; set a host", ownLabel)
			}
			h = ownLabel + "." + domain
		}
		if ns, ok := p.owner[h]; ok && ns != r.Namespace && !cfg.InterNamespace {
			return reject("host %s is already served for namespace %s", h, ns)
		}
		a.Hosts = append(a.Hosts, h)
	}
	if custom {
		a.CNAMETarget = domain
	}
	return a
}

// customHostsShard is the shard among cands where one of hosts is already served ("" when none
// is): a custom host's CNAME points at one shard, and every route for it must be there.
func (p *planner) customHostsShard(hosts []string, cands []ShardLoad) string {
	for _, h := range hosts {
		if s, ok := p.hostShard[h]; ok && slices.ContainsFunc(cands, func(c ShardLoad) bool { return c.Name == s }) {
			return s
		}
	}
	return ""
}

// ownDefaultHost reports whether h is a default host Shardgate gave this Ingress earlier: its
// first label is the Ingress' own default label, or, from before default labels carried a hash,
// <name>-<namespace> on a host Shardgate allocated to it that is no longer directly under a
// shard's domain (the zone, cluster ID or shard changed).
func (p *planner) ownDefaultHost(h string, r Route, ownLabel string) bool {
	h = normalizeHost(h)
	label, rest, ok := strings.Cut(h, ".")
	if !ok {
		return false
	}
	if label == ownLabel {
		return true
	}
	return label == r.Name+"-"+r.Namespace && slices.Contains(r.HeldHosts, h) &&
		!slices.ContainsFunc(p.shards, func(s Shard) bool { return s.Domain == rest })
}

// checkShardName refuses hosts under a shard's domain that are Shardgate's own names or another
// Ingress' default host.
func (p *planner) checkShardName(h string, s *Shard, r Route) error {
	if bare := strings.TrimPrefix(h, "*."); bare == s.Domain {
		if h == bare {
			return fmt.Errorf("host %s is shard %s's own name (the CNAME target of custom hosts); no route may claim it", h, s.Name)
		}
		return fmt.Errorf("host %s would take every name of shard %s; no route may claim it", h, s.Name)
	}
	label, rest, _ := strings.Cut(h, ".")
	if rest != s.Domain {
		return nil
	}
	// The Gateway canary's label was any host's before it was reserved: a route that held one then
	// keeps it (its routers keep serving it; the canary's route is the more specific one).
	if label == names.CanaryLabel || label == names.CanaryGatewayLabel && !slices.Contains(r.HeldHosts, h) {
		return fmt.Errorf("host %s is reserved for Shardgate's canary of shard %s", h, s.Name)
	}
	if ns, name, ok := names.DefaultHostOwner(label); ok && (ns != r.Namespace || name != r.Name) {
		return fmt.Errorf("host %s is reserved as the default host of Ingress %s in namespace %s", h, name, ns)
	}
	if owner, ok := p.defaultLabels[label]; ok && owner != r.Namespace+"/"+r.Name {
		return fmt.Errorf("host %s is reserved as the default host of Ingress %s", h, owner)
	}
	return nil
}

// candidates are the shards that accept r, restricted to forced when set.
func (p *planner) candidates(r Route, forced string) []ShardLoad {
	var cands []ShardLoad
	for _, s := range p.shards {
		if s.Claim != "" {
			continue // claimed shards take only the Ingresses pinned to them
		}
		if s.NamespaceSelector != nil && !s.NamespaceSelector.Matches(labels.Set(r.NamespaceLabels)) {
			continue
		}
		if s.RouteSelector != nil && !s.RouteSelector.Matches(labels.Set(r.Labels)) {
			continue
		}
		if forced != "" && s.Name != forced {
			continue
		}
		if !serves(&s, r) {
			continue
		}
		cands = append(cands, ShardLoad{Name: s.Name, Labels: s.Labels, Routes: p.load[s.Name], Capacity: s.Capacity,
			Seq: p.allocated, Utilization: s.Utilization, LoadKnown: s.LoadKnown, RequestsPerSecond: s.RequestsPerSecond,
			CapacityRPS: s.CapacityRPS})
	}
	return cands
}

// serves reports whether the shard's routers are the flavour the route's class asks for.
func serves(s *Shard, r Route) bool {
	return s.Flavour == "" || r.Flavour == "" || s.Flavour == r.Flavour
}

// readAnnotation is the first of the route's annotations the routers read ("" for none): a name
// in reads, under any prefix (as the admission policy matches them).
func readAnnotation(reads, annotations []string) string {
	if len(reads) == 0 {
		return ""
	}
	for _, k := range slices.Sorted(slices.Values(annotations)) {
		name := k[strings.LastIndex(k, "/")+1:]
		if slices.Contains(reads, name) {
			return k
		}
	}
	return ""
}

// keeps reports whether the shard serves the route, or keeps it where it is: an Ingress its routers
// select by Shardgate's class annotation, whatever class it names, that was on the shard when the
// shard's flavour changed and whose class asks for the flavour it asked for then (KeptFor).
func keeps(s *Shard, r Route) bool {
	return serves(s, r) || (s.RouteClass != "" && r.SelectableByClass && r.Shard == s.Name &&
		(r.KeptFor != "" && r.KeptFor == r.Flavour || s.ChangingTo != "" && r.Flavour == s.ChangingTo))
}

// keptFor is the kept-for mark of a route allocated to shard s: the flavour its class asks for,
// while s keeps it although its routers are another flavour, or while a held change will make
// them one that keeps it; "" otherwise.
func keptFor(s *Shard, r Route) string {
	switch {
	case !r.SelectableByClass || r.Flavour == "":
		return ""
	case s.Flavour != "" && r.Flavour != s.Flavour, s.ChangingRouteClass != "" && r.Flavour != s.ChangingTo:
		return r.Flavour
	}
	return ""
}

// anyServes reports whether a shard the planner may choose has the routers the route asks for.
func (p *planner) anyServes(r Route) bool {
	return slices.ContainsFunc(p.shards, func(s Shard) bool { return s.Claim == "" && serves(&s, r) })
}

func normalizeHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
}

// ValidateHost normalizes a rule host and refuses what Shardgate must not serve: invalid names,
// wildcards unless allowed, and names of another cluster or of the seed (under the zone but
// outside this cluster's domain).
func ValidateHost(host string, cfg Config) (string, error) {
	h := normalizeHost(host)
	if strings.HasPrefix(h, "*.") {
		if !cfg.AllowWildcards {
			return "", fmt.Errorf("wildcard host %s is not allowed by the IngressProfile", h)
		}
		if errs := validation.IsWildcardDNS1123Subdomain(h); len(errs) > 0 {
			return "", fmt.Errorf("host %s is not a valid wildcard name: %s", h, strings.Join(errs, "; "))
		}
	} else if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
		return "", fmt.Errorf("host %q is not a valid DNS name: %s", h, strings.Join(errs, "; "))
	}
	if cfg.Zone != "" && InDomain(h, cfg.Zone) && !InDomain(h, cfg.ClusterDomain) {
		return "", fmt.Errorf("host %s is under %s but outside this cluster's domain %s: it belongs to another cluster or the seed", h, cfg.Zone, cfg.ClusterDomain)
	}
	return h, nil
}

// InDomain reports whether host is domain or a name under it.
func InDomain(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// shardOfHost returns the shard whose domain is the longest suffix of host: x.edge.c1.z belongs
// to shard edge, x.c1.z to default (DNS wildcards stop at existing names the same way).
func shardOfHost(host string, shards []Shard) *Shard {
	var best *Shard
	for i := range shards {
		s := &shards[i]
		if InDomain(strings.TrimPrefix(host, "*."), s.Domain) && (best == nil || len(s.Domain) > len(best.Domain)) {
			best = s
		}
	}
	return best
}
