#!/usr/bin/env bash
# Builds the control plane make e2e runs, once per machine: kube-apiserver,
# kube-controller-manager and kube-scheduler of the k8s.io/kubernetes
# release this module requires, and etcd's server at the version that
# release requires, into a cache outside the clone keyed by that release
# ($LOCKSTEP_KUBE_CACHE, default ~/.cache/lockstep/kube-<version>). A stamp
# written after a successful build (the versions, Go's version and the
# platform) guards it: a second run with the same stamp builds nothing.
# The lockstep scheduler (kube-scheduler with the sample's plugin) is built
# on every run, since it is built from this clone; with a warm build cache
# that is a link; with the argument control-plane (make scale and make
# scale-quick, whose runs use neither), it and the sample's extender are
# not built. Prints the directory of the binaries on its last line.
#
# Cold, this is some 20 CPU-minutes, 2.5 GB of memory at its peak and 3 GB
# of Go build cache; warm, seconds.
set -euo pipefail
cd "$(dirname "$0")"
export GOWORK=off GOFLAGS="${GOFLAGS:-} -buildvcs=false -mod=mod"
go=${GO:-go}

kube=$($go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd=$($go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
cache=${LOCKSTEP_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/kube-$kube}
bin=$cache/bin
mkdir -p "$bin"

# kube-apiserver --version reports the release, as a release build does.
major=${kube#v}; major=${major%%.*}
minor=${kube#v"$major".}; minor=${minor%%.*}
ldflags="-w -X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=$major"
ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"

stamp="kubernetes $kube etcd $etcd $($go env GOVERSION) $($go env GOOS)/$($go env GOARCH)"
# Two clones on one machine may run make e2e at once: one builds, the
# other waits for its stamp.
exec 9>"$cache/.lock"
command -v flock >/dev/null 2>&1 && flock 9
if [ "$(cat "$cache/stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "== building kube-apiserver, kube-controller-manager, kube-scheduler $kube and etcd $etcd into $bin (once per machine: some 20 CPU-minutes cold)" >&2
  rm -f "$cache/stamp"
  start=$(date +%s)
  $go build -ldflags="$ldflags" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    ./cmd/etcd
  echo "$stamp" >"$cache/stamp"
  echo "== built in $(($(date +%s) - start)) s" >&2
else
  echo "== $bin is built ($stamp)" >&2
fi
if [ "${1:-}" != control-plane ]; then
  $go build -ldflags="$ldflags" -o "$bin/" ./cmd/lockstep-kube-scheduler
  $go build -ldflags=-w -o "$bin/lockstep-sample-extender" github.com/lockstep-dev/lockstep/sample/cmd/extender
fi
echo "$bin"
