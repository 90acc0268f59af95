package report

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestEnvironmentLines(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []string
	}{
		{"none", ``, nil},
		{"bare url", `{"provider":"url","target_url":"http://127.0.0.1:8080"}`, nil},
		{"not json", `{`, nil},
		{"docker", `{"provider":"docker","host":"ci-1","incarnation":2,
			"target":{"container_id":"0123456789abcdef0123"},"image":"longhaul-target/api:9f1c2e","commit":"9f1c2e",
			"network":"longhaul-r1-2",
			"database":{"kind":"postgres","url":"postgres://longhaul@127.0.0.1:32770/longhaul?sslmode=disable",
				"image":"longhaul/postgres:15-offline","process":{"container_id":"fedcba9876543210"}},
			"notes":["provider auto chose docker"]}`, []string{
			"environment: docker on ci-1, incarnation 2",
			"  target:   container 0123456789ab, image longhaul-target/api:9f1c2e, commit 9f1c2e, network longhaul-r1-2",
			"  database: postgres postgres://longhaul@127.0.0.1:32770/longhaul?sslmode=disable (container fedcba987654, image longhaul/postgres:15-offline)",
			"  note:     provider auto chose docker",
		}},
		{"docker, netns route", `{"provider":"docker","host":"ci-1","incarnation":1,"target_url":"http://127.0.0.1:32801",
			"route":"netns","netns":{"path":"/proc/4242/ns/net","id":"net:[4026532185]","url":"http://127.0.0.1:8080"},
			"target":{"container_id":"0123456789abcdef0123"},"image":"longhaul/demo-target:latest"}`, []string{
			"environment: docker on ci-1, incarnation 1",
			"  target:   container 0123456789ab, image longhaul/demo-target:latest",
			"  route:    http://127.0.0.1:8080 inside the container's network namespace net:[4026532185]",
		}},
		{"docker, published port", `{"provider":"docker","host":"ci-1","incarnation":1,"target_url":"http://127.0.0.1:32801",
			"route":"published-port","target":{"container_id":"0123456789abcdef0123"},
			"notes":["route: published port http://127.0.0.1:32801 through docker-proxy, not the container's own network namespace: not permitted"]}`, []string{
			"environment: docker on ci-1, incarnation 1",
			"  target:   container 0123456789ab",
			"  route:    published-port http://127.0.0.1:32801",
			"  note:     route: published port http://127.0.0.1:32801 through docker-proxy, not the container's own network namespace: not permitted",
		}},
		{"local", `{"provider":"local","host":"dev","incarnation":1,"target":{"pid":4242},
			"database":{"kind":"postgres","url":"postgres://longhaul@127.0.0.1:5433/longhaul","process":{"pid":4240}}}`, []string{
			"environment: local on dev, incarnation 1",
			"  target:   pid 4242",
			"  database: postgres postgres://longhaul@127.0.0.1:5433/longhaul (pid 4240)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := environmentLines(json.RawMessage(tt.raw))
			if !slices.Equal(got, tt.want) {
				t.Errorf("environmentLines:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
