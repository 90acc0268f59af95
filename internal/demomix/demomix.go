// Package demomix holds a request mix of the demo target
// (examples/demo-target) as a scenario's ops, shared by the end-to-end
// tests that drive it in different packages, so that they measure the same
// traffic.
package demomix

// ListCreate is a scenario's ops: three requests in four list 20 items of
// a random bucket (GET /items, the route DEMO_RESPONSE_VARIANT changes),
// one in four creates an item in a random bucket and expects 201.
const ListCreate = `ops:
  - name: list
    weight: 3
    request: {method: GET, path: /items, query: {bucket: "{{ randInt 0 9 }}", limit: "20"}}
  - name: create
    weight: 1
    request:
      method: POST
      path: /items
      json: {bucket: "{{ randInt 0 9 }}", title: "{{ randString 8 16 }}"}
    expect: {status: [201]}
`
