package kubectlplugin

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Status is what kube-public/shardgate-ingress tells everyone in a user cluster.
type Status struct {
	ClusterDomain string        `json:"clusterDomain"`
	HTTPS         bool          `json:"https"`
	Shards        []ShardStatus `json:"shards"`
}

// ShardStatus is one shard's names.
type ShardStatus struct {
	Name string `json:"name"`
	// Domain: Shardgate publishes it and every name under it.
	Domain string `json:"domain"`
	// CNAMETarget: what a host of your own must be a CNAME to, to land on this shard.
	CNAMETarget string `json:"cnameTarget"`
	// Flavour is the kind of router the shard runs; IngressClass the class that asks for it.
	Flavour      string `json:"flavour,omitempty"`
	IngressClass string `json:"ingressClass,omitempty"`
	// Load is the shard's load state where its routers report load: Normal, Saturated or Unknown.
	Load string `json:"load,omitempty"`
}

// StatusFrom reads the ConfigMap the shards controller renders (render.UserInfo).
func StatusFrom(cm *corev1.ConfigMap) Status {
	d := cm.Data
	s := Status{ClusterDomain: d["clusterDomain"], HTTPS: d["https"] == "true", Shards: []ShardStatus{}}
	for _, name := range strings.Split(d["shards"], ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		p := "shard." + name + "."
		s.Shards = append(s.Shards, ShardStatus{Name: name, Domain: d[p+"domain"], CNAMETarget: d[p+"cnameTarget"],
			Flavour: d[p+"flavour"], IngressClass: d[p+"ingressClass"], Load: d[p+"load"]})
	}
	sort.Slice(s.Shards, func(i, j int) bool { return s.Shards[i].Name < s.Shards[j].Name })
	return s
}

// Domains maps each shard to its domain.
func (s Status) Domains() map[string]string {
	m := map[string]string{}
	for _, sh := range s.Shards {
		m[sh.Name] = sh.Domain
	}
	return m
}
