// Command lockstep-conformance plays the lockstep conformance suite.
//
//	lockstep-conformance server [-url URL] [-start CMD] [-cases DIR] [-run RE]
//
// plays the server-side cases against the server at URL. Cases that drain
// their server need a server of their own: with -start, CMD (run by sh -c)
// starts one and prints its base URL as its first line of output, and is
// killed after the case. Without -url and -start it plays them against the
// framework's reference server, started in this process.
//
//	lockstep-conformance serve [-addr ADDR]
//
// runs the reference server of the conformance contract and prints its URL.
//
//	lockstep-conformance client [-cases DIR] [-run RE] CMD ARGS...
//
// plays the client-side cases: for each it runs a scripted server on
// 127.0.0.1 and then CMD ARGS... <scenario> <base URL>, the client under
// test, and checks what the client asked and what it reported as the last
// line of its output (see conformance/cases/README.md). Without CMD it
// plays them with the framework's client in this process.
//
//	lockstep-conformance goclient <scenario> <base URL>
//
// is the framework's client as such a program.
//
// Each case is reported as PASS, FAIL (with the reason) or SKIP, followed
// by "N/M cases pass"; the exit status is 1 when any case did not pass.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/conformance"
	"github.com/lockstep-dev/lockstep/framework"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lockstep-conformance server|serve|client|goclient [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	ok := true
	switch os.Args[1] {
	case "server":
		ok, err = runServer(ctx, os.Args[2:])
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "client":
		ok, err = runClient(ctx, os.Args[2:])
	case "goclient":
		err = goclient(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want server, serve, client or goclient", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockstep-conformance:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// casesFlags are the flags every playing command has.
type casesFlags struct {
	dir string
	run string
}

func (c *casesFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&c.dir, "cases", "", "folder of case files (default: the cases built in)")
	fl.StringVar(&c.run, "run", "", "play only cases whose name matches this regular expression")
}

func (c *casesFlags) load(side string) ([]*conformance.Case, error) {
	var fsys fs.FS = conformance.Cases()
	if c.dir != "" {
		fsys = os.DirFS(c.dir)
	}
	cases, err := conformance.LoadCases(fsys, side)
	if err != nil {
		return nil, err
	}
	if c.run == "" {
		return cases, nil
	}
	re, err := regexp.Compile(c.run)
	if err != nil {
		return nil, err
	}
	var out []*conformance.Case
	for _, cs := range cases {
		if re.MatchString(cs.Name) {
			out = append(out, cs)
		}
	}
	return out, nil
}

func fingerprint() (string, error) {
	c, err := conformance.Contract()
	if err != nil {
		return "", err
	}
	return c.Fingerprint(), nil
}

func referenceConfig() framework.ServerConfig {
	return framework.ServerConfig{
		SessionTTL: time.Second, Heartbeat: 250 * time.Millisecond, DrainTimeout: 20 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
	}
}

func runServer(ctx context.Context, args []string) (bool, error) {
	fl := flag.NewFlagSet("server", flag.ExitOnError)
	url := fl.String("url", "", "base URL of the server under test")
	start := fl.String("start", "", "shell command that starts a server and prints its base URL first")
	var cf casesFlags
	cf.register(fl)
	_ = fl.Parse(args)
	cases, err := cf.load("server")
	if err != nil {
		return false, err
	}
	fp, err := fingerprint()
	if err != nil {
		return false, err
	}
	var target conformance.Target
	switch {
	case *start != "":
		target.Fresh = func() (string, func(), error) { return startCommand(ctx, *start) }
		if *url == "" {
			u, stop, err := startCommand(ctx, *start)
			if err != nil {
				return false, err
			}
			defer stop()
			*url = u
		}
		target.URL = *url
	case *url != "":
		target.URL = *url
	default:
		ref, err := conformance.StartReference("127.0.0.1:0", referenceConfig())
		if err != nil {
			return false, err
		}
		defer ref.Stop()
		target.URL = ref.URL
		target.Fresh = func() (string, func(), error) {
			r, err := conformance.StartReference("127.0.0.1:0", referenceConfig())
			if err != nil {
				return "", nil, err
			}
			return r.URL, func() { _ = r.Stop() }, nil
		}
	}
	results := conformance.RunServerCases(ctx, target, cases, conformance.DefaultVars(fp))
	return conformance.Report(os.Stdout, "server", results), nil
}

// startCommand runs a shell command that starts a server and reads the
// server's base URL from the first line it prints.
func startCommand(ctx context.Context, command string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		s, _ := r.ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = r.WriteTo(os.Stderr)
	}()
	select {
	case u := <-line:
		if !strings.HasPrefix(u, "http") {
			stop()
			return "", nil, fmt.Errorf("%s printed %q, not a base URL", command, u)
		}
		return u, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("the server command printed no URL within 30s")
	}
}

func serve(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fl.String("addr", "127.0.0.1:0", "address to listen on")
	_ = fl.Parse(args)
	ref, err := conformance.StartReference(*addr, referenceConfig())
	if err != nil {
		return err
	}
	fmt.Println(ref.URL)
	<-ctx.Done()
	return ref.Stop()
}

func runClient(ctx context.Context, args []string) (bool, error) {
	fl := flag.NewFlagSet("client", flag.ExitOnError)
	var cf casesFlags
	cf.register(fl)
	_ = fl.Parse(args)
	cases, err := cf.load("client")
	if err != nil {
		return false, err
	}
	fp, err := fingerprint()
	if err != nil {
		return false, err
	}
	client := conformance.GoClient()
	if fl.NArg() > 0 {
		client = conformance.CommandClient(fl.Arg(0), fl.Args()[1:]...)
	}
	results := conformance.RunClientCases(ctx, client, cases, conformance.DefaultVars(fp))
	return conformance.Report(os.Stdout, "client", results), nil
}

func goclient(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return errors.New("usage: lockstep-conformance goclient <scenario> <base URL>")
	}
	out, err := conformance.GoClient()(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(data))
	return nil
}
