package embeddedclient

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/xdsconform/xdsconform/conformance"
	"github.com/xdsconform/xdsconform/targets"
)

// clientEnv, set, makes this test binary the client under test.
const clientEnv = "XDSCONFORM_EXAMPLE_CLIENT"

// TestMain runs the client when the harness launches this binary as the
// client command, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		// The harness names the target and the CSDS address in the
		// command ({{.Target}}, {{.CSDS}}) and in the environment.
		if err := Run(ctx, os.Getenv("XDSCONFORM_TARGET"), os.Getenv("XDSCONFORM_CSDS_ADDR")); err != nil {
			fmt.Fprintln(os.Stderr, "example client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestClientConformance runs the client suite against the client of
// client.go, each pair a subtest named ID/variant.
func TestClientConformance(t *testing.T) {
	self := "'" + strings.ReplaceAll(os.Args[0], "'", `'\''`) + "'"
	conformance.RunClientSuite(t, conformance.ClientOptions{
		Client: targets.ClientOptions{
			// Your client's command: ./bin/my-client --xds-target {{.Target}} --csds {{.CSDS}}
			Command:  clientEnv + "=1 exec " + self,
			Features: []string{targets.ClientFeatureXdstp},
		},
		KnownFailingFile: "known-failing.txt",
	})
}
