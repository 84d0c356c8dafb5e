package gogen

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/codegen/gomodel"
)

// decided loads a golden case and has the model make its decisions.
func decided(t *testing.T, name string) *gomodel.Package {
	t.Helper()
	c, err := contract.Load(filepath.Join("..", "internal", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := gomodel.Build(c, name)
	if err != nil {
		t.Fatal(err)
	}
	pkg.DecideValidation()
	return pkg
}

func typeNamed(t *testing.T, pkg *gomodel.Package, name string) *gomodel.Type {
	t.Helper()
	for _, ty := range pkg.Types {
		if ty.Name == name {
			return ty
		}
	}
	t.Fatalf("no type %s", name)
	return nil
}

// TestValidatorsRenderTheModel checks that the validator renderer renders
// what the model decided and refuses to render a keyword the model did not
// decide, or one it decided is checked where the renderer has no check.
func TestValidatorsRenderTheModel(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nodestatus", "escapehatch", "uncovered"} {
		if _, err := buildValidators(decided(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Without the decisions about its keywords, a type's checks are not
	// rendered.
	pkg := decided(t, "nodestatus")
	ty := typeNamed(t, pkg, "NodeStatus")
	v := *ty.Validation
	v.Keywords = nil
	ty.Validation = &gomodel.Validation{Covered: v.Covered, Emit: v.Emit, Messages: v.Messages, Reasons: v.Reasons, Calls: v.Calls}
	_, err := buildValidators(pkg)
	if err == nil || !strings.Contains(err.Error(), "the model did not decide") || !strings.Contains(err.Error(), "NodeStatus") {
		t.Errorf("rendering NodeStatus without the model's keyword decisions: got %v, want an error naming an undecided keyword", err)
	}

	// An x-go-type value decided checked: the renderer has no check for it.
	pkg = decided(t, "escapehatch")
	ty = typeNamed(t, pkg, "Escapes")
	flipped := false
	for i, k := range ty.Validation.Keywords {
		if k.Keyword == "x-go-type" && !k.Checked {
			ty.Validation.Keywords[i].Checked, ty.Validation.Keywords[i].Reason = true, ""
			flipped = true
			break
		}
	}
	if !flipped {
		t.Fatalf("the model of Escapes has no unchecked x-go-type decision: %+v", ty.Validation.Keywords)
	}
	_, err = buildValidators(pkg)
	if err == nil || !strings.Contains(err.Error(), "x-go-type") || !strings.Contains(err.Error(), "which it cannot") {
		t.Errorf("rendering an x-go-type decided checked: got %v, want an error", err)
	}
}
