// Pinned build of external-dns for the test harness. Never imported by the product module.
// The replace lines move dependency versions that the module proxy refuses (403) to the nearest
// served ones.
module github.com/shardgate/shardgate/hack/tools/external-dns

go 1.26.6

require sigs.k8s.io/external-dns v0.22.0

require github.com/gogo/protobuf v1.3.2 // indirect

replace (
	github.com/exoscale/egoscale/v3 => github.com/exoscale/egoscale/v3 v3.1.43
	github.com/openshift/api => github.com/openshift/api v0.0.0-20251015095338-264e80a2b6e7
	github.com/openshift/client-go => github.com/openshift/client-go v0.0.0-20251015124057-db0dee36e235
)
