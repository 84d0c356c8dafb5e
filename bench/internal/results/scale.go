package results

import (
	"path"

	"github.com/lockstep-dev/lockstep/bench/internal/report"
)

// scale adds the section that points to P9 and P10's figures: make scale
// measures them against a real control plane over tens of minutes, so
// this suite does not run them, and the report links where they are.
func (w *writeup) scale() {
	prefix := docsPrefix(w.run.Docs)
	w.out.Doc.Sections = append(w.out.Doc.Sections, report.Section{
		Title: "Cluster scale (P9, P10)",
		Intro: `
P9 (lockstep's node controller, heartbeats, bind → Running and the notice
of a killed node at 5,000 hollow nodes) and P10 (durable writes of node
liveness, lockstep's path beside Kubernetes' Leases and NodeStatus at the
largest N both hold) are not this suite's: ` + "`make scale`" + ` measures them
against a real etcd, kube-apiserver and kube-controller-manager, and
writes their figures, the targets met or missed and each run's command,
date and load to [scale.md](` + prefix + `scale.md).`,
		Plots: [][2]string{{prefix + "scale/scale.svg", "durable writes per second and control-plane CPU against N (make scale)"}},
	})
}

// docsPrefix is the path from the report's folder to docs/, with a
// trailing slash, or "" when the report is in docs/ (docs "" or ".").
func docsPrefix(docs string) string {
	if docs == "" || docs == "." {
		return ""
	}
	return path.Clean(docs) + "/"
}
