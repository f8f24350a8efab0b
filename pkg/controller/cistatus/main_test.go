package cistatus_test

import (
	"testing"

	"github.com/shardgate/shardgate/test/framework"
)

// The writer's tests share one real seed API server (controllertest.Seed): framework.Main stops it.
func TestMain(m *testing.M) { framework.Main(m) }
