// Pinned build of controller-gen for tests and code generation.
module github.com/shardgate/shardgate/hack/tools/controller-gen

go 1.26.0

require sigs.k8s.io/controller-tools v0.23.0
