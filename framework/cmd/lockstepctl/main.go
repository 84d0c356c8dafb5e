// Command lockstepctl is the operator's view of running lockstep
// components. It talks to a component's server over the lockstep protocol
// and its status path only, so it needs nothing but a URL (and, under TLS,
// a certificate):
//
//	lockstepctl status URL [-o table|json|yaml]
//	lockstepctl check URL (--contract C --version V [--fingerprint F] | --contract-file FILE)
//	lockstepctl watch URL TOPIC [--select FIELD=VALUE]… [--contract C] [--version V]
//	lockstepctl certs ca|issue|operator DIR …
//
// status prints the component's contracts and versions, its peers (agreed
// version, state, since), sessions per version, topics and its own clients.
// check asks, through a dry-run handshake that opens no session, whether a
// client at version V would be accepted now, and prints the server's own
// refusal sentence if not; it exits 0 when accepted, 1 when refused. watch
// streams a topic's changes as lines until interrupted. certs keeps a CA
// and the certificates of components and operators in a folder, each
// naming its identity as the framework reads it (lockstep://<component>/<name>),
// in a layout made for rotation (see certs.go).
//
// It does not diff contracts: that is lockstep-gen diff's job.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// exitRefused is check's exit status when the server would refuse; other
// failures exit 2.
const exitRefused = 1

// shutdownGrace is how long lockstepctl lets its command wind down after
// SIGINT or SIGTERM (a watch closes its session) before it exits anyway;
// a second signal exits at once.
const shutdownGrace = 2 * time.Second

func main() { os.Exit(mainCode()) }

// mainCode is main but for its exit: the command run on os.Args, stopped
// by SIGINT and SIGTERM.
func mainCode() int {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		cancel()
		select {
		case <-sigs:
		case <-time.After(shutdownGrace):
		}
		os.Exit(exitSignalled(sig))
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if code != 0 && ctx.Err() != nil {
		// Interrupted: the shell's convention, 128 + the signal.
		select {
		case sig := <-sigs:
			code = exitSignalled(sig)
		default:
			code = exitSignalled(syscall.SIGTERM)
		}
	}
	return code
}

// exitSignalled is the exit status of a command ended by sig.
func exitSignalled(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

const usage = `usage:
  lockstepctl status URL [-o table|json|yaml] [TLS flags]
  lockstepctl check URL (--contract C --version V [--fingerprint F] | --contract-file FILE) [--component NAME] [--release R] [TLS flags]
  lockstepctl watch URL TOPIC [--select FIELD=VALUE]… [--contract C] [--version V] [--contract-file FILE] [TLS flags]
  lockstepctl certs ca DIR [--rotate | --drop-old]
  lockstepctl certs issue DIR COMPONENT/NAME [--dns N,…] [--ip A,…] [--loopback] [--lifetime D]
  lockstepctl certs operator DIR NAME
TLS flags: --tls-cert FILE --tls-key FILE (the operator's identity), --tls-ca FILE, --tls-server-name NAME`

// run is the whole command, for tests: it returns the exit status.
// Everything it prints goes through a termWriter: what a server sends is
// never written to a terminal raw (termsafe.go).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out, errOut := newTermWriter(ctx, stdout), newTermWriter(context.Background(), stderr)
	defer errOut.Flush()
	code := runCommand(ctx, args, out, errOut)
	if err := out.Flush(); err != nil && code == 0 {
		fmt.Fprintln(errOut, "lockstepctl:", err)
		code = 2
	}
	return code
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "status":
		err = runStatus(ctx, args[1:], stdout)
	case "check":
		err = runCheck(ctx, args[1:], stdout)
	case "watch":
		err = runWatch(ctx, args[1:], stdout)
	case "certs":
		err = runCerts(args[1:], stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		err = usageError("unknown command %q", args[0])
	}
	var refused *refusedError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &refused):
		return exitRefused
	case errors.Is(err, flag.ErrHelp):
		return 0
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		fmt.Fprintln(stderr, "lockstepctl: interrupted")
		return 2
	default:
		fmt.Fprintln(stderr, "lockstepctl:", err)
		var ue usageErr
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, usage)
		}
		return 2
	}
}

type usageErr string

func (e usageErr) Error() string { return string(e) }

func usageError(format string, args ...any) error { return usageErr(fmt.Sprintf(format, args...)) }

// refusedError is check's answer "no": already printed, exit 1.
type refusedError struct{}

func (*refusedError) Error() string { return "refused" }

// parse parses a subcommand's flags, which may come before or after its
// positional arguments, and checks how many positional arguments it got.
func parse(fs *flag.FlagSet, args []string, positional ...string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != len(positional) {
		return nil, usageError("%s needs %d arguments (%v), got %d", fs.Name(), len(positional), positional, len(pos))
	}
	return pos, nil
}
