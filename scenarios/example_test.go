package scenarios_test

import (
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// Parse a scenario, compile it, and play one VU's requests by hand: what the
// driver does for every virtual user.
func Example() {
	s, err := scenarios.Parse([]byte(`
name: example
setup:
  - name: login
    request: {method: POST, path: /login, json: {user: "vu{{ vu }}", password: "${env:PASSWORD}"}}
    capture: [{json: token, var: token}]
ops:
  - name: create
    weight: 1
    request:
      method: POST
      path: /items
      headers: {Authorization: "Bearer {{ .token }}"}
      json: {bucket: "{{ randInt 7 7 }}", title: "item {{ seq }}"}
    capture: [{json: id, pool: items}]
  - name: get
    weight: 3
    request: {path: '/items/{{ pick "items" }}'}
`), "example.yaml")
	if err != nil {
		fmt.Println(err) // every problem, as example.yaml:LINE: message
		return
	}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{
		LookupEnv: func(name string) (string, bool) { return "s3cret", name == "PASSWORD" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	vu := plan.NewVU(1)
	var r scenarios.Rendered // one per worker, reused
	show := func(a *scenarios.Action) {
		if err := a.Render(vu, &r); err != nil {
			fmt.Printf("%s: %v\n", a.Name, err)
			return
		}
		fmt.Printf("%s %s", r.Method, r.PathQuery)
		for _, h := range r.Headers {
			fmt.Printf(" [%s: %s]", h.Key, h.Value)
		}
		if len(r.Body) > 0 {
			fmt.Printf(" %s", r.Body)
		}
		fmt.Println()
	}

	login, create, get := plan.Setup[0], plan.Ops[0], plan.Ops[1]
	show(login)
	fmt.Println(login.Check(vu, 200, []byte(`{"token": "abc"}`)))
	err = get.Render(vu, &r)
	fmt.Println(errors.Is(err, scenarios.ErrPoolEmpty)) // nothing created yet: skipped
	show(create)
	fmt.Println(create.Check(vu, 201, []byte(`{"id": 42}`)), plan.Pools.Len("items"))
	show(get)
	fmt.Println(get.Check(vu, 500, nil))
	// Output:
	// POST /login [Content-Type: application/json] {"password":"s3cret","user":"vu1"}
	// ok
	// true
	// POST /items [Authorization: Bearer abc] [Content-Type: application/json] {"bucket":7,"title":"item 1"}
	// ok 1
	// GET /items/42
	// 5xx
}
