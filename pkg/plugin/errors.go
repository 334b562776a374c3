package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// Exit codes, documented in docs/scripting.md.
const (
	ExitOK               = 0
	ExitFailure          = 4  // anything else, including an interrupted run (run it again)
	ExitUsage            = 2  // bad input; nothing was changed
	ExitPodEvictionError = 3  // PodEvictionFailure: pods did not leave within --drain-timeout
	ExitBlockers         = 5  // check found blockers
	ExitLocked           = 6  // another run holds the node group's lock
	ExitNodeCreation     = 7  // NodeCreationFailure: new nodes did not become Ready within --node-ready-timeout
	ExitPaused           = 8  // the run stopped on purpose: paused by cancel, left soaking (--no-wait), or at --not-after with no maintenance window left
	ExitUnreachable      = 9  // the API server did not answer (refused, timed out, unknown host, untrusted certificate, or evictions' connections lost until --drain-timeout)
	ExitHookFailed       = 10 // a hook failed or timed out, or an annotation hook was not taken off within --hook-timeout
	ExitCloudUnreachable = 11 // a cloud's API did not answer (unknown host, refused, timed out, untrusted certificate): not the Kubernetes API server
	ExitRolledBack       = 12 // the run rolled back and finished its rollback (--on-gate-fail rollback, or a rollback control): back as before, not upgraded
)

// usageError marks bad input: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error from a command to the process exit code.
func ExitCode(err error) int {
	var usage *usageError
	var input *plan.InputError
	var rolledBack *session.RolledBackError
	var creation *upgrade.NodeCreationFailure
	var service *upgrade.ServiceUpdateFailure
	var cloudFailure cloud.UpdateError
	var cloudInput interface{ Input() bool }
	var unreachable *unreachableError
	var cloudUnreachable *cloud.UnreachableError
	var coded interface{ exitCode() int }
	var sessionUsage *session.UsageError
	var refusal *session.BlockerRefusal
	switch {
	case err == nil:
		return ExitOK
	case interrupted(err):
		return ExitFailure
	case errors.As(err, &refusal):
		return ExitBlockers
	case errors.As(err, &sessionUsage):
		return ExitUsage
	case errors.As(err, &coded):
		return coded.exitCode()
	case errors.As(err, &cloudUnreachable):
		return ExitCloudUnreachable
	case errors.As(err, &unreachable):
		return ExitUnreachable
	case errors.As(err, &usage), errors.As(err, &input):
		return ExitUsage
	case errors.As(err, &cloudInput) && cloudInput.Input():
		return ExitUsage
	case errors.As(err, &service):
		return serviceExitCode(service.Code())
	case errors.As(err, &cloudFailure):
		// A cloud's failure of a run's machine (gce: a quota).
		return serviceExitCode(cloudFailure.Code)
	case errors.As(err, &creation):
		return ExitNodeCreation
	case stoppedOnPurpose(err):
		return ExitPaused
	case errors.As(err, &rolledBack):
		return ExitRolledBack
	}
	return stopExitCode(err)
}

// stopExitCode maps what stopped a run partway (a drain, a hook, the
// blockers, another holder of the lock) to its exit code.
func stopExitCode(err error) int {
	var eviction *drain.PodEvictionFailure
	var evictionLost *drain.EvictionUnreachable
	var hook *upgrade.HookFailure
	var blockers *blockersFound
	var held *state.HeldError
	switch {
	case errors.As(err, &eviction):
		return ExitPodEvictionError
	case errors.As(err, &evictionLost):
		// after a PodEvictionFailure: another node's PDB decides
		return ExitUnreachable
	case errors.As(err, &hook):
		return ExitHookFailed
	case errors.As(err, &blockers):
		return ExitBlockers
	case errors.As(err, &held):
		return ExitLocked
	}
	return ExitFailure
}

// interrupted reports whether err is a command stopped by Ctrl-C or
// SIGTERM, whatever it was doing (planning included), rather than a stop
// on purpose: exit 4, as docs/scripting.md says, never a usage error.
func interrupted(err error) bool {
	return errors.Is(err, context.Canceled) && !stoppedOnPurpose(err)
}

// stoppedOnPurpose reports whether err is a run's stop on purpose:
// paused, left soaking, or its window closed.
func stoppedOnPurpose(err error) bool {
	var paused *upgrade.PausedError
	var soaking *upgrade.SoakingError
	var closed *upgrade.WindowClosedError
	var quarantined *upgrade.QuarantinedError
	return errors.As(err, &paused) || errors.As(err, &soaking) || errors.As(err, &closed) || errors.As(err, &quarantined)
}

// PrintError writes the one-line error kubectl-style and returns the exit code.
func PrintError(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	msg := err.Error()
	if interrupted(err) {
		msg = "interrupted; run the same command again to finish, or put the group back in service with \"kubectl nodeupgrade abort\""
	}
	fmt.Fprintf(w, "error: %s\n", msg)
	return ExitCode(err)
}

// unreachableError says the API server did not answer: from the first
// request on (a wrong address, most likely), or after it had answered.
type unreachableError struct {
	server, context string
	// what is the error of what was being done, its network cause worded
	// without the request's URL
	what     string
	answered bool // the server had answered a request of the command
	err      error
}

func (e *unreachableError) Error() string {
	where := e.server
	if e.context != "" {
		where += fmt.Sprintf(" (context %q)", e.context)
	}
	if e.answered {
		return fmt.Sprintf("lost the API server %s: %s; run the same command again once it answers", where, e.what)
	}
	return fmt.Sprintf("cannot reach the API server %s: %s; check --context, --server and the kubeconfig, or run again once the server answers", where, e.what)
}

func (e *unreachableError) Unwrap() error { return e.err }

// errNoKubeconfig refuses a command that needs the cluster when the
// connection flags lead nowhere.
var errNoKubeconfig = usageErrorf("no kubeconfig: no cluster in $KUBECONFIG or ~/.kube/config, and no --server; give one with --kubeconfig FILE or KUBECONFIG")

// explainConnection turns a failure to reach the API server into an error
// that names the server and keeps what was being done; answered says the
// server had answered the command before, so the connection flags are not
// in question. A cloud's endpoint that did not answer (the provider
// marked the failure: a cloud.UnreachableError) is named as the cloud's,
// whatever URL error is behind it. Other errors, and an interruption, are
// returned as they are.
func explainConnection(err error, configFlags *genericclioptions.ConfigFlags, answered bool) error {
	var cloudEndpoint *cloud.UnreachableError
	if errors.As(err, &cloudEndpoint) && !errors.Is(err, context.Canceled) {
		return &cloudUnreachableError{endpoint: cloudEndpoint, what: withoutURL(err), err: err}
	}
	cause := connectionFailure(err)
	if cause == nil || errors.Is(err, context.Canceled) {
		return err
	}
	ue := &unreachableError{what: withoutURL(err), answered: answered, err: err}
	if configFlags == nil {
		return ue
	}
	if cfg, cerr := configFlags.ToRESTConfig(); cerr == nil {
		ue.server = cfg.Host
	}
	if configFlags.Context != nil && *configFlags.Context != "" {
		ue.context = *configFlags.Context
	} else if raw, rerr := configFlags.ToRawKubeConfigLoader().RawConfig(); rerr == nil {
		ue.context = raw.CurrentContext
	}
	return ue
}

// withoutURL is err's message without the URL of the request that got no
// answer: `Get "https://…/api/v1/nodes?…": dial tcp …` says less than the
// words around it.
func withoutURL(err error) string {
	what := err.Error()
	var uerr *url.Error
	if errors.As(err, &uerr) {
		what = strings.Replace(what, uerr.Error(), uerr.Err.Error(), 1)
	}
	return what
}

// cloudUnreachableError says a cloud's API did not answer: its endpoint,
// and what points the provider there, for the operator to check; never
// the Kubernetes API server, which answered.
type cloudUnreachableError struct {
	endpoint *cloud.UnreachableError
	what     string // the error of what was being done, without the URL
	err      error
}

func (e *cloudUnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the %s API at %s: %s; check %s, then run the same command again",
		e.endpoint.Cloud, e.endpoint.Endpoint, e.what, e.endpoint.Settings)
}

func (e *cloudUnreachableError) Unwrap() error { return e.err }

// connectionFailure returns the network cause of a request that never got
// an answer from the API server (refused, timed out, unknown host, TLS, or
// lost while retried until --request-retry-timeout), or nil for anything
// else (an answer, even an error one, is not one).
func connectionFailure(err error) error {
	var exhausted *transport.RetriesExhausted
	if errors.As(err, &exhausted) {
		return exhausted
	}
	var uerr *url.Error
	if err == nil || !errors.As(err, &uerr) {
		return nil
	}
	var op *net.OpError
	var dns *net.DNSError
	var netErr net.Error
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(uerr.Err, &dns), errors.As(uerr.Err, &op),
		errors.As(uerr.Err, &verify), errors.As(uerr.Err, &authority), errors.As(uerr.Err, &hostname),
		errors.As(uerr.Err, &netErr) && netErr.Timeout():
		return uerr.Err
	}
	return nil
}

// noKubeconfig reports whether the connection flags lead nowhere: no
// kubeconfig file with a cluster, no --server, and not in a pod. Client-go
// then falls back to http://localhost:8080, whose refusal says nothing.
func noKubeconfig(configFlags *genericclioptions.ConfigFlags) bool {
	if configFlags.APIServer != nil && *configFlags.APIServer != "" {
		return false
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return false
	}
	raw, err := configFlags.ToRawKubeConfigLoader().RawConfig()
	return err == nil && len(raw.Clusters) == 0
}

// serviceExitCode maps a cloud service's update error code to the exit
// code of the same failure in a run the plugin carries out.
func serviceExitCode(code string) int {
	switch code {
	case cloud.CodePodEviction:
		return ExitPodEvictionError
	case cloud.CodeNodeCreation:
		return ExitNodeCreation
	}
	return ExitFailure
}
