package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
)

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var conn connFlags
	conn.register(fs)
	output := fs.String("o", "table", "output format: table, json or yaml")
	pos, err := parse(fs, args, "URL")
	if err != nil {
		return err
	}
	if *output != "table" && *output != "json" && *output != "yaml" {
		return usageError("-o %q: want table, json or yaml", *output)
	}
	srv, err := conn.connect(pos[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	st, err := fetchStatus(ctx, srv)
	if err != nil {
		return err
	}
	// What -o json and -o yaml print is bounded by what was read: JSON's
	// escapes make a string at most six times longer, YAML's indentation
	// adds a few bytes a line.
	stdout = &boundedWriter{w: stdout, limit: 8*conn.maxBytes + 1<<20}
	switch *output {
	case "json":
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return writeIndentedJSON(stdout, b)
	case "yaml":
		// Through JSON, so the keys and the readable durations are the
		// status JSON's own.
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return writeYAML(stdout, b)
	}
	return printStatus(stdout, st)
}

// printStatus writes the status as tables, one per section.
func printStatus(w io.Writer, st framework.ServerStatus) error {
	state := "ready"
	if !st.Ready {
		// A server before NotReady lost its prefix sent it along.
		state = "not ready: " + text(strings.TrimPrefix(st.NotReady, "not ready: "))
	}
	if st.Draining {
		state += ", draining"
	}
	fmt.Fprintf(w, "%s %s (instance %s): %s; as of %s\n", cell(st.Component), cell(st.Release), cell(st.Instance), state, st.Now.Format(time.RFC3339))
	if st.Truncated != "" {
		fmt.Fprintf(w, "the server's status %s\n", text(st.Truncated))
	}

	section(w, "CONTRACT\tVERSION\tFINGERPRINT\tCLIENT\tSESSIONS", len(st.Served), func(tw io.Writer) {
		for _, v := range st.Served {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", cell(v.Contract), cell(v.Version), cell(v.Fingerprint), cell(v.Client), st.PeersByVersion[v.Contract][v.Version])
		}
	})
	section(w, "PEER\tINSTANCE\tIDENTITY\tRELEASE\tCONTRACT\tAGREED\tSTATE\tSINCE\tIDLE", len(st.Sessions), func(tw io.Writer) {
		for _, s := range st.Sessions {
			identity := "-" // no verified certificate: the server runs without mutual TLS
			if s.Identity != "" {
				identity = cell(s.Identity)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s (%s)\t%s\n", cell(s.Peer.Component), cell(s.Peer.Instance), identity, cell(s.Peer.Release),
				cell(s.Contract), cell(s.Version), cell(string(s.State)), s.Since.Format(time.RFC3339), s.Age.Round(time.Second), s.Idle.Round(time.Millisecond))
		}
	})
	section(w, "TOPIC\tCONTRACT\tVERSION\tKEYS\tWRITERS\tWATCHERS", len(st.Topics), func(tw io.Writer) {
		for _, t := range st.Topics {
			writers := fmt.Sprint(t.Writers)
			if t.Writers == 0 {
				writers = "none"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\n", cell(t.Topic), cell(t.Contract), cell(t.Version), t.Keys, writers, max(t.WatcherCount, len(t.Watchers)))
		}
	})
	section(w, "CLIENT OF\tVERSION\tSERVER\tREADY\tBLOCKED\tLONGEST\tENDPOINTS", len(st.Clients), func(tw io.Writer) {
		for _, c := range st.Clients {
			eps := make([]string, len(c.Endpoints))
			for i, e := range c.Endpoints {
				eps[i] = cell(e.URL) + " " + cell(string(e.State))
				if e.Version != "" {
					eps[i] += " at " + cell(e.Version)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\t%s\t%s\n", cell(c.Contract), cell(c.Version), cell(c.Server), c.Ready, c.Blocked,
				time.Duration(c.LongestBlocked), strings.Join(eps, ", "))
		}
	})
	return nil
}

// section writes one table, or nothing when it has no rows.
func section(w io.Writer, header string, rows int, body func(io.Writer)) {
	if rows == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	body(tw)
	_ = tw.Flush()
}
