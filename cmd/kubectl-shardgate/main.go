// Command kubectl-shardgate is a kubectl plugin: on the PATH, `kubectl shardgate ...` runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardgate/shardgate/pkg/kubectlplugin"
	"github.com/shardgate/shardgate/pkg/routekinds"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The route kinds explain knows: the seed controller's.
	kinds := routekinds.Builtin()
	if err := kubectlplugin.Run(ctx, kinds, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		stop()
		os.Exit(1)
	}
}
