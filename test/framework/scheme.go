package framework

import (
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/gatewayapi"
	"github.com/shardgate/shardgate/pkg/sources"
)

// Scheme knows the built-in types, CRDs, Cluster API's Cluster (v1beta2), the part of
// Kubermatic's Cluster Shardgate reads, Shardgate's API, external-dns' DNSEndpoint and Gateway API's standard kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(dnsrecords.AddToScheme(s))
	utilruntime.Must(cmapi.AddToScheme(s))
	utilruntime.Must(cmacme.AddToScheme(s))
	utilruntime.Must(sources.AddKubermaticToScheme(s))
	utilruntime.Must(gatewayapi.AddToScheme(s))
	return s
}
