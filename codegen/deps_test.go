package codegen_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRuntimeLinksNoGenerator checks that the generator's tree stays on the
// generator side: a binary built only on framework and generated code (the
// sample's node controller), and the framework itself, must link no package
// under codegen/. Generated code calls framework/jsonwire for that reason.
// The framework's commands (framework/cmd/..., lockstepctl) are operators'
// tools, not part of a component: lockstepctl reads contract files with
// codegen/contract, and is left out.
func TestRuntimeLinksNoGenerator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, dir := range []string{
		filepath.Join("..", "sample", "cmd", "nodecontroller"),
		filepath.Join("..", "framework"),
	} {
		// go list from inside the package's folder works whether or not the
		// folder belongs to a nested module.
		list := exec.Command("go", "list", "./...")
		list.Dir = dir
		pkgs, err := list.Output()
		if err != nil {
			t.Fatalf("go list in %s: %v", dir, err)
		}
		var runtime []string
		for _, p := range strings.Fields(string(pkgs)) {
			if !strings.Contains(p, "/framework/cmd/") {
				runtime = append(runtime, p)
			}
		}
		cmd := exec.Command("go", append([]string{"list", "-deps"}, runtime...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps in %s: %v\n%s", dir, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps in %s listed nothing", dir)
		}
		sawFramework := false
		for _, p := range deps {
			if strings.HasPrefix(p, "github.com/lockstep-dev/lockstep/codegen") {
				t.Errorf("%s links generator package %s", dir, p)
			}
			if p == "github.com/lockstep-dev/lockstep/framework/jsonwire" {
				sawFramework = true
			}
		}
		if !sawFramework && strings.Contains(dir, "nodecontroller") {
			t.Errorf("%s does not link framework/jsonwire: the check no longer looks at a binary built on generated code", dir)
		}
	}
}
