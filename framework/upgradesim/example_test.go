package upgradesim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/framework/upgradesim"
)

// A plan reads as it prints: one step per line.
func ExampleParsePlan() {
	p, err := upgradesim.ParsePlan("rolling", 0, `
		start nodecontroller#0 at v1
		start kubelet at v1
		wait until connected within 10s
		upgrade nodecontroller#0 to v2 without drain
		partition kubelet and nodecontroller#0
		wait 200ms
		heal kubelet and nodecontroller#0
	`)
	if err != nil {
		fmt.Println(err)
		return
	}
	p.Steps = append(p.Steps, upgradesim.Upgrade("kubelet", "v2"), upgradesim.WaitUntil(upgradesim.CallsAcknowledged(10), 5*time.Second))
	fmt.Print(p)
	// Output:
	// plan "rolling", seed 0, 9 steps:
	//   1. start nodecontroller#0 at v1
	//   2. start kubelet at v1
	//   3. wait until connected within 10s
	//   4. upgrade nodecontroller#0 to v2 without drain
	//   5. partition kubelet and nodecontroller#0
	//   6. wait 200ms
	//   7. heal kubelet and nodecontroller#0
	//   8. upgrade kubelet to v2
	//   9. wait until 10 calls acknowledged within 5s
}

// A random plan is a pure function of its seed.
func ExampleSim_RandomPlan() {
	sim, err := upgradesim.New(world{}.config())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(sim.RandomPlan(4, upgradesim.DefaultMutations()))
	// Output:
	// plan "random", seed 4, 10 steps:
	//    1. start kubelet at v1
	//    2. start nodecontroller at v1
	//    3. wait until connected within 10s
	//    4. upgrade nodecontroller to v2
	//    5. drop the next 1 answer between kubelet and nodecontroller
	//    6. wait 56ms
	//    7. heal kubelet and nodecontroller
	//    8. upgrade kubelet to v2
	//    9. wait until connected within 10s
	//   10. wait until 5 calls acknowledged within 10s
}

// Running a plan against real components: a lockstep rolling upgrade of
// the kubelet and nodecontroller of world_test.go. Report.Summary is the
// same every time a plan passes.
func ExampleSim_Execute() {
	sim, err := upgradesim.New(world{}.config())
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := sim.Execute(context.Background(), upgradesim.Plan{Name: "example", Steps: []upgradesim.Step{
		upgradesim.Start("nodecontroller", "v1"),
		upgradesim.Start("kubelet", "v1"),
		upgradesim.WaitUntil(upgradesim.Connected, 10*time.Second),
		upgradesim.Upgrade("kubelet", "v2"),
		upgradesim.Upgrade("nodecontroller", "v2"),
		upgradesim.WaitUntil(upgradesim.CallsAcknowledged(5), 10*time.Second),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(rep.Summary())
	for _, v := range rep.Violations {
		fmt.Println(v)
	}
	// Output:
	// verdict: ok
	// final: kubelet=v2 nodecontroller=v2
	// agreed: kubelet→nodecontroller nodeinfo 2.0.0
}
