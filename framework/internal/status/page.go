package status

import (
	"bytes"
	"html/template"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// PrefersHTML reports whether a request asks for a page rather than JSON:
// its Accept header names text/html before any JSON type. JSON stays the
// default, so programs (and curl) get what they always got.
func PrefersHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/html", "application/xhtml+xml":
			return true
		case "application/json", "*/*":
			return false
		}
	}
	return false
}

// page renders a server's status (framework.ServerStatus) for a person: the same facts as the
// JSON, durations as "5s" and times as RFC 3339.
var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"dur": func(d any) string {
		switch d := d.(type) {
		case time.Duration:
			return d.Round(time.Millisecond).String()
		case handshake.Duration:
			return time.Duration(d).Round(time.Millisecond).String()
		}
		return "?"
	},
	"time": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"yes": func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Component}} {{.Release}}: lockstep status</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f0f0f0} .bad{color:#a00;font-weight:bold} .empty{color:#777}
</style></head><body>
<h1>{{.Component}} <small>release {{.Release}}, instance {{.Instance}}</small></h1>
<p id="state">Ready: <span class="{{if .Ready}}ok{{else}}bad{{end}}">{{yes .Ready}}</span>{{with .NotReady}} ({{.}}){{end}}.
Draining: <span class="{{if .Draining}}bad{{else}}ok{{end}}">{{yes .Draining}}</span>.
As of {{time .Now}}.</p>

<h2>Contracts served</h2>
<table id="served"><tr><th>contract</th><th>version</th><th>fingerprint</th><th>client</th><th>sessions</th></tr>
{{range .Served}}<tr><td>{{.Contract}}</td><td>{{.Version}}</td><td><code>{{.Fingerprint}}</code></td><td>{{.Client}}</td><td>{{index (index $.PeersByVersion .Contract) .Version}}</td></tr>
{{end}}</table>

{{with .Truncated}}<p class="bad" id="truncated">This page {{.}}.</p>{{end}}
<h2>Peers</h2>
{{if .Sessions}}<p id="session-count">{{.SessionCount}} sessions{{if lt (len .Sessions) .SessionCount}}, {{len .Sessions}} listed, taken in turns from each identity{{end}}.</p><table id="peers"><tr><th>contract</th><th>agreed version</th><th>component</th><th>instance</th><th>identity</th><th>release</th><th>state</th><th>since</th><th>age</th><th>idle</th></tr>
{{range .Sessions}}<tr class="peer"><td>{{.Contract}}</td><td>{{.Version}}</td><td>{{.Peer.Component}}</td><td>{{.Peer.Instance}}</td><td>{{.Identity}}</td><td>{{.Peer.Release}}</td><td>{{.State}}</td><td>{{time .Since}}</td><td>{{dur .Age}}</td><td>{{dur .Idle}}</td></tr>
{{end}}</table>{{else}}<p class="empty" id="peers">No sessions.</p>{{end}}

<h2>Topics</h2>
{{if .Topics}}<table id="topics"><tr><th>contract</th><th>version</th><th>topic</th><th>keys</th><th>writers</th><th>watchers</th><th>sets</th><th>deletes</th></tr>
{{range .Topics}}<tr><td>{{.Contract}}</td><td>{{.Version}}</td><td>{{.Topic}}</td><td>{{.Keys}}</td><td class="{{if eq .Writers 0}}bad{{else}}ok{{end}}">{{if eq .Writers 0}}none{{else}}{{.Writers}}{{end}}</td><td>{{.WatcherCount}}</td><td>{{.Sets}}</td><td>{{.Deletes}}</td></tr>
{{end}}</table>{{else}}<p class="empty">No topics.</p>{{end}}

<h2>Clients of this component</h2>
{{if .Clients}}<table id="clients"><tr><th>contract</th><th>version</th><th>server</th><th>ready</th><th>blocked calls</th><th>longest blocked</th><th>endpoints</th></tr>
{{range .Clients}}<tr><td>{{.Contract}}</td><td>{{.Version}}</td><td>{{.Server}}</td><td class="{{if .Ready}}ok{{else}}bad{{end}}">{{yes .Ready}}</td><td>{{.Blocked}}</td><td>{{dur .LongestBlocked}}</td>
<td>{{range .Endpoints}}<div>{{.URL}}: {{.State}}{{with .Version}} at {{.}}{{end}}{{with .Error}} <span class="bad">{{.}}</span>{{end}}</div>{{end}}</td></tr>
{{end}}</table>{{else}}<p class="empty">No clients shown (Server.AddClient adds them).</p>{{end}}
<p>JSON: <code>curl {{"/lockstep/status"}}</code>; <code>lockstepctl status URL</code>.</p>
</body></html>
`))

// WritePage writes the page of st, a framework.ServerStatus, or returns
// the error that kept it from rendering: it is rendered whole first, so a
// failure never sends half a page, and the caller answers it its own way.
func WritePage(w http.ResponseWriter, st any) error {
	var buf bytes.Buffer
	if err := page.Execute(&buf, st); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
	return nil
}
