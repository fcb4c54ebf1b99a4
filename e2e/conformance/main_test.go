// Package conformance is a test binary that runs Kubernetes' own scheduling e2e specs
// (k8s.io/kubernetes/test/e2e/scheduling at the version pinned in go.mod) against any cluster.
// build.sh compiles it once with `go test -c`; pyscheduler/conformance runs it with
// --ginkgo.focus=sig-scheduling against a local cluster, once per scheduler.
package conformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"

	// the specs this binary exists for
	_ "k8s.io/kubernetes/test/e2e/scheduling"

	// dumps namespace events and pods when a spec fails, as the upstream suite does
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
)

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// TestE2E runs the registered specs through upstream's runner: its suite set-up (waits for
// schedulable nodes), its Ginkgo configuration and, with --report-dir, its JUnit report.
func TestE2E(t *testing.T) {
	e2e.RunE2ETests(t)
}
