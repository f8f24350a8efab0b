// Package claims decides IngressClaims: which are admitted under the profile's limits, the shard
// each gets, which Ingresses each binds, and what reclaiming does once they are gone (Decide). It
// is pure; pkg/controller/claims gathers, calls it and applies.
package claims

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/names"
)

// Claim is an IngressClaim of the user cluster (tenant input, all of it).
type Claim struct {
	Namespace, Name string
	Generation      int64
	Created         time.Time
	Spec            v1alpha1.IngressClaimSpec
}

// Key is namespace/name.
func (c Claim) Key() string { return c.Namespace + "/" + c.Name }

// Input is what Decide decides from.
type Input struct {
	Claims   []Claim
	Settings v1alpha1.ClaimSettings
	// Records are the seed's records (status.claims) from the last pass.
	Records []v1alpha1.ClaimRecord
	// ProfileShards are the profile's shard names (a claimed shard never takes one).
	ProfileShards []string
	// ClusterDomain is <clusterid>.<zone> ("" while not accepted yet).
	ClusterDomain string
	// Ingresses are the cluster's Ingresses, namespace/name.
	Ingresses map[string]bool
	// Ready are the claimed shards' ready routers.
	Ready map[string]int32
}

// Output is the new records, and the claims to delete (reclaim policy Delete).
type Output struct {
	Records []v1alpha1.ClaimRecord
	Delete  []string // namespace/name
}

// Decide admits claims oldest first: a claim already admitted stays admitted (turning claims off
// or lowering limits refuses only new claims; an edit over the limits keeps the admitted replicas
// and resources, EditRefused); a new one needs claims allowed, its replicas and resources within
// the profile's maxima and its namespace under maxPerNamespace. Each admitted claim keeps its
// shard (named <claim>-<namespace> when that is a free shard name, else claim-<hash>) and binds
// the Ingresses it names that exist and no older claim binds. Once every Ingress it named is gone
// its reclaim policy applies: Retain releases it (routers stay, nothing binds until the claim's
// next edit), Recycle keeps it bound, Delete removes its record (so its shard and names go) and
// the claim.
func Decide(in Input) Output {
	s := v1alpha1.ResolveClaims(in.Settings)
	claims := slices.Clone(in.Claims)
	slices.SortFunc(claims, func(a, b Claim) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Key(), b.Key()))
	})
	old := map[string]v1alpha1.ClaimRecord{}
	taken := map[string]bool{}
	for _, n := range in.ProfileShards {
		taken[n] = true
	}
	for _, r := range in.Records {
		old[r.Namespace+"/"+r.Name] = r
		if r.Shard != "" {
			taken[r.Shard] = true
		}
	}
	perNamespace := map[string]int32{}
	boundBy := map[string]string{} // ingress → claim
	var out Output
	for _, c := range claims {
		prev, had := old[c.Key()]
		rec := v1alpha1.ClaimRecord{Namespace: c.Namespace, Name: c.Name, Shard: prev.Shard, Replicas: prev.Replicas,
			Resources: prev.Resources, EverBound: prev.EverBound, ReleasedGeneration: prev.ReleasedGeneration}
		admitted := had && prev.Shard != ""
		problem := overLimits(c, s, perNamespace[c.Namespace])
		switch {
		case !admitted && !s.Allowed:
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimsNotAllowed, "the cluster's IngressProfile does not allow IngressClaims"))
			continue
		case !admitted && problem != "":
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimOverLimits, problem))
			continue
		case !admitted:
			rec.Shard = shardName(c, taken)
			taken[rec.Shard] = true
		}
		if problem == "" {
			rec.Replicas, rec.Resources = max(c.Spec.Replicas, 1), *c.Spec.Resources.DeepCopy()
		}
		if in.ClusterDomain != "" {
			if err := dnsname.CheckDomain(names.ShardDomain(rec.Shard, in.ClusterDomain)); err != nil && !admitted {
				out.Records = append(out.Records, failed(v1alpha1.ClaimRecord{Namespace: c.Namespace, Name: c.Name},
					v1alpha1.ReasonClaimNamesTooLong, fmt.Sprintf("the claimed shard's domain %s: %v; use a shorter claim or namespace name", names.ShardDomain(rec.Shard, in.ClusterDomain), err)))
				delete(taken, rec.Shard)
				continue
			}
		}
		perNamespace[c.Namespace]++
		// An edit of a released claim binds it again.
		if rec.ReleasedGeneration != 0 && c.Generation > rec.ReleasedGeneration {
			rec.ReleasedGeneration, rec.EverBound = 0, false
		}
		released := rec.ReleasedGeneration != 0
		if !released {
			for _, ref := range c.Spec.Ingresses {
				key := c.Namespace + "/" + ref.Name
				if in.Ingresses[key] && boundBy[key] == "" && !slices.Contains(rec.Ingresses, ref.Name) {
					boundBy[key] = c.Key()
					rec.Ingresses = append(rec.Ingresses, ref.Name)
				}
			}
			slices.Sort(rec.Ingresses)
		}
		switch {
		case len(rec.Ingresses) > 0:
			rec.EverBound = true
		case rec.EverBound && !released:
			// Every Ingress it named is gone: reclaim.
			switch c.Spec.ReclaimPolicy {
			case v1alpha1.ReclaimDelete:
				out.Delete = append(out.Delete, c.Key())
				continue
			case v1alpha1.ReclaimRecycle:
			default:
				rec.ReleasedGeneration, released = max(c.Generation, 1), true
			}
		}
		ready := in.Ready[rec.Shard]
		switch {
		case released:
			rec.Phase, rec.Reason, rec.Message = v1alpha1.ClaimReleased, v1alpha1.ReasonClaimReleased,
				"every Ingress it named is gone (reclaimPolicy Retain): its routers stay, nothing binds until the claim is edited"
		case ready == 0:
			rec.Phase, rec.Reason, rec.Message = v1alpha1.ClaimPending, v1alpha1.ReasonClaimProvisioning, fmt.Sprintf("shard %s has no ready router yet", rec.Shard)
		default:
			rec.Phase, rec.Reason, rec.Message = v1alpha1.ClaimBound, v1alpha1.ReasonClaimBound,
				fmt.Sprintf("shard %s: %d ready routers serving %d Ingresses", rec.Shard, ready, len(rec.Ingresses))
		}
		if problem != "" {
			rec.Reason, rec.Message = v1alpha1.ReasonClaimEditRefused, "the edit is refused ("+problem+"); the admitted replicas and resources stay"
		}
		out.Records = append(out.Records, rec)
	}
	slices.SortFunc(out.Records, func(a, b v1alpha1.ClaimRecord) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

func failed(rec v1alpha1.ClaimRecord, reason, msg string) v1alpha1.ClaimRecord {
	return v1alpha1.ClaimRecord{Namespace: rec.Namespace, Name: rec.Name, Phase: v1alpha1.ClaimFailed, Reason: reason, Message: msg}
}

// overLimits says what of the claim exceeds the profile's limits ("" when nothing does).
func overLimits(c Claim, s v1alpha1.ClaimSettings, inNamespace int32) string {
	var p []string
	if c.Spec.Replicas > s.MaxReplicas {
		p = append(p, fmt.Sprintf("replicas %d > maxReplicas %d", c.Spec.Replicas, s.MaxReplicas))
	}
	for _, list := range []corev1.ResourceList{c.Spec.Resources.Requests, c.Spec.Resources.Limits} {
		for name, q := range list {
			limit, ok := s.MaxResources[name]
			if !ok && len(s.MaxResources) > 0 || ok && q.Cmp(limit) > 0 {
				p = append(p, fmt.Sprintf("%s %s exceeds maxResources (%s)", name, q.String(), limitText(s.MaxResources, name)))
			}
		}
	}
	if inNamespace >= s.MaxPerNamespace {
		p = append(p, fmt.Sprintf("namespace %s already has %d claims (maxPerNamespace %d)", c.Namespace, inNamespace, s.MaxPerNamespace))
	}
	slices.Sort(p)
	return strings.Join(slices.Compact(p), "; ")
}

func limitText(l corev1.ResourceList, name corev1.ResourceName) string {
	if q, ok := l[name]; ok {
		return q.String()
	}
	return "not allowed"
}

// shardName is <claim>-<namespace> when that is a valid, free shard name, else claim-<hash>.
func shardName(c Claim, taken map[string]bool) string {
	n := c.Name + "-" + c.Namespace
	if len(n) <= 40 && len(validation.IsDNS1123Label(n)) == 0 && !taken[n] && n != v1alpha1.DefaultShardName {
		return n
	}
	for i := 0; ; i++ {
		n = fmt.Sprintf("claim-%x", sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", c.Namespace, c.Name, i)))[:16]
		if !taken[n] {
			return n
		}
	}
}
