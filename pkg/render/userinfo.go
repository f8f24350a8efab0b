package render

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// UserInfo renders kube-public/shardgate-ingress: readable by everyone in the user cluster, it
// says the cluster domain, each shard's domain, the CNAME target for custom hosts, and whether
// the cluster's names are served over HTTPS, and, where the cluster serves Gateway API, which
// Gateway HTTPRoutes attach to.
func UserInfo(clusterDomain string, shards []v1alpha1.ShardSpec, https, gatewayAPI bool,
	load map[string]v1alpha1.ShardLoadState,
) (*unstructured.Unstructured, error) {
	data := map[string]string{"clusterDomain": clusterDomain, "https": fmt.Sprint(https)}
	if gatewayAPI {
		data["gateway"] = names.Namespace + "/" + names.ParentGatewayName
	}
	var shardNames, lines []string
	for _, s := range shards {
		d := names.ShardDomain(s.Name, clusterDomain)
		shardNames = append(shardNames, s.Name)
		data["shard."+s.Name+".domain"] = d
		data["shard."+s.Name+".cnameTarget"] = d
		data["shard."+s.Name+".flavour"] = string(s.Flavour)
		data["shard."+s.Name+".ingressClass"] = ShardClass(s)
		loadNote := ""
		if state, ok := load[s.Name]; ok {
			data["shard."+s.Name+".load"] = string(state)
			loadNote = "; load " + string(state)
		}
		lines = append(lines, fmt.Sprintf("  %-12s *.%s (%s routers, class %s%s; custom hosts: CNAME to %s)", s.Name, d,
			s.Flavour, ShardClass(s), loadNote, d))
	}
	data["shards"] = strings.Join(shardNames, ",")
	data["README"] = fmt.Sprintf(`Ingress in this cluster is served by Shardgate.
Every name under %s reaches the cluster's ingress routers.
Shards:
%s
An Ingress rule without a host gets <name>-<namespace>-<hash>.<shard domain>.
For a host of your own, create a DNS CNAME from it to the shard domain's apex.
%s%s`, clusterDomain, strings.Join(lines, "\n"), httpsHelp(https), gatewayHelp(gatewayAPI))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: names.UserInfoNamespace, Name: names.UserInfoName, Labels: managedLabels("")}, Data: data}
	objs, err := toUnstructured(Object{corev1.SchemeGroupVersion.WithKind("ConfigMap"), cm})
	if err != nil {
		return nil, err
	}
	return objs[0], nil
}

func httpsHelp(https bool) string {
	if !https {
		return "HTTPS: not set up for this cluster; bring your own certificate (spec.tls with a secretName).\n"
	}
	return `HTTPS: every name under the shard domains is served with the cluster's certificate
(port 443), with nothing to do: default hosts included, and Ingresses whose spec.tls lists hosts
under the cluster domain without a secretName. For a host of your own, put its certificate in a
kubernetes.io/tls Secret in your namespace and name it in spec.tls[].secretName (for example
with cert-manager in this cluster); routers pick it by the name a client asks for.
`
}

func gatewayHelp(gatewayAPI bool) string {
	if !gatewayAPI {
		return ""
	}
	return fmt.Sprintf(`Gateway API: attach an HTTPRoute to Gateway %[1]s/%[2]s
(parentRefs: [{namespace: %[1]s, name: %[2]s}]); Shardgate allocates it to a shard like an
Ingress, adds that shard's Gateway to its parentRefs, and says where it landed in its
status.parents. A route without hostnames gets a default host; a host an Ingress of another
namespace holds is refused, and the other way round. For a host of your own, also attach a
ListenerSet of your namespace to the same Gateway with an HTTP listener (port 80) and an HTTPS
one (port 443, its certificate in a kubernetes.io/tls Secret of your namespace) for that exact
hostname: once a route of yours holds the host, its shard's routers serve it, and the
ListenerSet's status says so. CNAME the host to the route's shardgate.io/cname-target.
`, names.Namespace, names.ParentGatewayName)
}
