// Package clusterview is the administrator's view of the seed: one summary per user cluster,
// built from its ClusterIngress alone, and the filter and pages over them. The status page, its
// JSON endpoint and `kubectl shardgate clusters` all show this one model, so a dashboard, a
// browser and a terminal never disagree about a cluster.
package clusterview

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Cluster is one user cluster as an administrator needs to see it.
type Cluster struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Source is the kind of the object the cluster came from (Cluster, KubermaticCluster, Secret).
	Source    string `json:"source"`
	Profile   string `json:"profile"`
	ClusterID string `json:"clusterID,omitempty"`
	Domain    string `json:"domain,omitempty"`
	// Ready, Reachable and DNS are the Ready, ClusterReachable and DNSPublished conditions.
	Ready     State `json:"ready"`
	Reachable State `json:"reachable"`
	DNS       State `json:"dns"`
	// DNSVerifiedBy: the authoritative servers that answer exactly the published targets (empty:
	// not verified, or the controller does not verify; then Published means the DNSEndpoint was
	// written).
	DNSVerifiedBy []string `json:"dnsVerifiedBy,omitempty"`
	Targets       []string `json:"targets,omitempty"`
	ReadyNodes    int32    `json:"readyNodes"`
	Shards        []Shard  `json:"shards"`
	Routes        int32    `json:"routes"`
	Rejected      int32    `json:"rejectedRoutes"`
	// RouteKinds count the routes per kind the cluster serves (Ingress, HTTPRoute).
	RouteKinds []v1alpha1.RouteKindCount `json:"routeKinds,omitempty"`
	// CertificateExpiry is the cluster certificate's notAfter, when TLS is on and it was issued.
	CertificateExpiry *time.Time `json:"certificateExpiry,omitempty"`
	LastPublished     *time.Time `json:"lastPublished,omitempty"`
	Conditions        []State    `json:"conditions"`
}

// State is a condition reduced to what a person reads: true/false/unknown, why, and since when.
type State struct {
	Type    string    `json:"type,omitempty"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitempty"`
}

// OK is true for a condition that holds.
func (s State) OK() bool { return s.Status == string(metav1.ConditionTrue) }

// Shard is one of the cluster's shards: what the profile (or a claim) asks for and what runs.
type Shard struct {
	Name string `json:"name"`
	// Flavour is the kind of router the shard runs (traefik, haproxy).
	Flavour    string   `json:"flavour"`
	Publishing string   `json:"publishing"`
	Claim      string   `json:"claim,omitempty"`
	Domain     string   `json:"domain,omitempty"`
	Desired    int32    `json:"desiredReplicas"`
	Ready      int32    `json:"readyReplicas"`
	Targets    []string `json:"targets,omitempty"`
	// Serving is the shard's canary verdict (RoutesServing), when the canary runs.
	Serving *State `json:"routesServing,omitempty"`
	// Load is what its routers report, when the shard reports load.
	Load *v1alpha1.ShardLoadStatus `json:"load,omitempty"`
}

// unknown is what a condition not yet written shows.
var unknown = State{Status: string(metav1.ConditionUnknown), Reason: "NotReported"}

// FromClusterIngress summarises one ClusterIngress. It reads nothing else: what it shows is
// exactly what the controllers recorded.
func FromClusterIngress(ci *v1alpha1.ClusterIngress) Cluster {
	c := Cluster{
		Namespace:  ci.Namespace,
		Name:       ci.Name,
		Source:     ci.Spec.ClusterRef.Kind,
		Profile:    ci.Spec.Profile,
		ClusterID:  ci.Status.ClusterID,
		Domain:     ci.Status.Domain,
		Targets:    ci.Status.Targets,
		ReadyNodes: ci.Status.ReadyNodeCount,
		Routes:     ci.Status.Routes,
		Rejected:   ci.Status.RejectedRoutes,
		RouteKinds: ci.Status.RouteKinds,
		Shards:     []Shard{},
		Conditions: []State{},
	}
	if c.ClusterID == "" {
		c.ClusterID = ci.Spec.ClusterID
	}
	c.Ready = condition(ci, v1alpha1.ConditionReady)
	c.Reachable = condition(ci, v1alpha1.ConditionClusterReachable)
	c.DNS = condition(ci, v1alpha1.ConditionDNSPublished)
	c.DNSVerifiedBy = ci.Status.DNSVerifiedBy
	if cert := ci.Status.Certificate; cert != nil && cert.NotAfter != nil {
		t := cert.NotAfter.Time
		c.CertificateExpiry = &t
	}
	if ci.Status.LastPublishedTime != nil {
		t := ci.Status.LastPublishedTime.Time
		c.LastPublished = &t
	}
	observed := map[string]v1alpha1.ShardStatus{}
	for _, s := range ci.Status.Shards {
		observed[s.Name] = s
	}
	canaries := map[string]*State{}
	for _, c := range ci.Status.Canaries {
		for _, cond := range c.Conditions {
			if cond.Type == v1alpha1.ConditionRoutesServing {
				st := stateOf(cond)
				canaries[c.Shard] = &st
			}
		}
	}
	for _, spec := range ci.Shards() {
		s := Shard{Name: spec.Name, Flavour: string(spec.Flavour), Publishing: string(spec.Publishing), Claim: spec.Claim,
			Desired: 1}
		if spec.Replicas != nil {
			s.Desired = *spec.Replicas
		}
		if st, ok := observed[spec.Name]; ok {
			s.Domain, s.Ready, s.Targets = st.Domain, st.ReadyReplicas, st.Targets
		}
		s.Serving = canaries[spec.Name]
		for i := range ci.Status.ShardLoad {
			if ci.Status.ShardLoad[i].Shard == spec.Name {
				s.Load = ci.Status.ShardLoad[i].DeepCopy()
			}
		}
		c.Shards = append(c.Shards, s)
	}
	for _, cond := range ci.Status.Conditions {
		c.Conditions = append(c.Conditions, stateOf(cond))
	}
	sort.Slice(c.Conditions, func(i, j int) bool { return c.Conditions[i].Type < c.Conditions[j].Type })
	return c
}

func condition(ci *v1alpha1.ClusterIngress, t string) State {
	for _, c := range ci.Status.Conditions {
		if c.Type == t {
			return stateOf(c)
		}
	}
	s := unknown
	s.Type = t
	return s
}

func stateOf(c metav1.Condition) State {
	return State{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
}
