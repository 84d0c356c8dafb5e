#!/usr/bin/env bash
# Runs the real-world corpus through github.com/atombender/go-jsonschema
# (the generator formerly published as omissis/go-jsonschema) for the
# comparison in docs/codegen.md: how many schemas it generates and
# compiles, how many real instances round-trip through its types, and how
# often its decoding (which checks required members, enums and some
# bounds) disagrees with jsonschema/v5 on the real instances. It works in
# a temporary module of its own, never as a dependency of this repository.
# Usage: codegen/compare-go-jsonschema.sh [VERSION [CORPUS]], CORPUS by
# default ../shared/realworld beside the repository.
set -euo pipefail
version=${1:-v0.24.1}
corpus=$(cd "${2:-$(dirname "$0")/../../shared/realworld}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOWORK=off GOFLAGS=-mod=mod GOBIN="$work/bin"
go install "github.com/atombender/go-jsonschema@$version"
cat > go.mod <<MOD
module gjscompare

go 1.26.0

require (
	github.com/atombender/go-jsonschema $version
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
)
MOD
total=0 generated=0
names=()
for dir in "$corpus"/*/; do
  name=$(basename "$dir")
  total=$((total + 1))
  pkg=p$(printf '%03d' "$total")
  mkdir -p "$pkg"
  cp "$dir/schema.json" "$pkg/doc.json"
  if "$GOBIN/go-jsonschema" -p "$pkg" -o "$pkg/types.go" "$pkg/doc.json" >"$pkg/gen.log" 2>&1; then
    generated=$((generated + 1))
    names+=("$pkg:$name")
  else
    rm -f "$pkg/types.go"
    echo "does not generate: $name: $(head -c 200 "$pkg/gen.log")" >&2
  fi
done
go mod tidy >/dev/null 2>&1 || true
compiled=0
ok=()
for entry in "${names[@]}"; do
  pkg=${entry%%:*}
  if go build "./$pkg" >"$pkg/build.log" 2>&1 && grep -q '^type DocJson ' "$pkg/types.go"; then
    compiled=$((compiled + 1))
    ok+=("$entry")
  else
    echo "does not compile: ${entry#*:}: $(head -c 200 "$pkg/build.log")" >&2
  fi
done
# One program checks every compiled package on the real instances.
mkdir -p check
{
  echo 'package main'
  echo 'import ('
  echo '"bytes"; "encoding/json"; "fmt"; "os"; "path/filepath"; "reflect"'
  echo '"github.com/santhosh-tekuri/jsonschema/v5"'
  for entry in "${ok[@]}"; do pkg=${entry%%:*}; echo "$pkg \"gjscompare/$pkg\""; done
  echo ')'
  cat <<'GO'
func decode(b []byte) (any, error) { d := json.NewDecoder(bytes.NewReader(b)); d.UseNumber(); var v any; err := d.Decode(&v); return v, err }
func main() {
	var instances, valid, roundTrips, disagree int
	check := func(name, dir string, rt func([]byte) ([]byte, error)) {
		c := jsonschema.NewCompiler()
		c.AssertFormat = true
		s, err := c.Compile(filepath.Join(dir, "schema.json"))
		if err != nil { fmt.Fprintln(os.Stderr, name, err); return }
		files, _ := filepath.Glob(filepath.Join(dir, "instance-*.json"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			v, _ := decode(data)
			refOK := s.Validate(v) == nil
			out, err := rt(data)
			instances++
			if refOK { valid++ }
			if (err == nil) != refOK { disagree++; fmt.Fprintf(os.Stderr, "disagrees: %s %s: go-jsonschema %v, jsonschema/v5 valid=%v\n", name, filepath.Base(f), err, refOK) }
			if refOK && err == nil {
				w, _ := decode(out)
				if reflect.DeepEqual(v, w) { roundTrips++ } else { fmt.Fprintf(os.Stderr, "round trip changes: %s %s\n", name, filepath.Base(f)) }
			}
		}
	}
GO
  for entry in "${ok[@]}"; do
    pkg=${entry%%:*}; name=${entry#*:}
    echo "check(\"$name\", \"$corpus/$name\", func(b []byte) ([]byte, error) { var v $pkg.DocJson; if err := json.Unmarshal(b, &v); err != nil { return nil, err }; return json.Marshal(v) })"
  done
  cat <<'GO'
	fmt.Printf("instances: %d (%d valid for jsonschema/v5); valid instances that round-trip: %d; verdicts that disagree with jsonschema/v5: %d\n", instances, valid, roundTrips, disagree)
}
GO
} > check/main.go
gofmt -w check/main.go
echo "go-jsonschema $version: $generated/$total schemas generate, $compiled/$total compile"
go run ./check
