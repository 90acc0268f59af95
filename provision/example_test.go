package provision_test

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// A target that is already running is never provisioned: the environment
// only carries its URL, and Teardown has nothing to remove.
func ExampleNew() {
	p, err := provision.New("auto", provision.Options{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, err := p.Provision(ctx, provision.Request{
		RunID: "nightly-42",
		Spec:  scenarios.Environment{Target: scenarios.Target{URL: "http://127.0.0.1:8080/"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(env.Provider, env.ID, env.TargetURL)
	fmt.Println(p.Teardown(ctx, env))
	// Output:
	// url nightly-42-0 http://127.0.0.1:8080
	// <nil>
}

func ExampleParseBytes() {
	n, _ := provision.ParseBytes("512m")
	fmt.Println(n)
	_, err := provision.ParseBytes("lots")
	fmt.Println(err)
	// Output:
	// 536870912
	// invalid environment: size "lots": want a number with an optional unit, like 512m or 1g
}
