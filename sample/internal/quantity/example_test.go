package quantity_test

import (
	"fmt"

	"github.com/lockstep-dev/lockstep/sample/internal/quantity"
)

// Quantities of a 1.0.0 NodeStatus as the integers 2.0.0 carries, and back.
func Example() {
	cpu, _ := quantity.Millis("3500m")
	memory, _ := quantity.Value("16Gi")
	fmt.Println(cpu, memory)
	fmt.Println(quantity.FormatMillis(cpu), quantity.FormatBytes(memory))
	// Output:
	// 3500 17179869184
	// 3500m 16Gi
}
