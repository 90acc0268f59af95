package scenarios

import (
	"reflect"
	"testing"
)

const restartBase = "name: x\nops: [{name: a, request: {path: /}}]\nenvironment:\n  provider: local\n  target:\n    command: [./app]\n"

func TestParseRestart(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		want     *Restart
		restarts int
	}{
		{"none", restartBase, nil, 0},
		{"on-failure", restartBase + "    restart: {policy: on-failure, max: 5}\n", &Restart{Policy: RestartOnFailure, Max: 5}, 5},
		{"default max", restartBase + "    restart: {policy: on-failure}\n", &Restart{Policy: RestartOnFailure, Max: DefaultRestartMax}, DefaultRestartMax},
		{"never", restartBase + "    restart: {policy: \"no\"}\n", &Restart{Policy: RestartNever}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.yaml), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Environment.Target.Restart; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("restart = %+v, want %+v", got, tt.want)
			}
			if got := s.Environment.Target.Restarts(); got != tt.restarts {
				t.Errorf("Restarts() = %d, want %d", got, tt.restarts)
			}
		})
	}
}

func TestParseRestartErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"bad policy", restartBase + "    restart: {policy: always}\n",
			[]string{`7: target.restart.policy "always" is not one of on-failure, no`}},
		{"no policy", restartBase + "    restart: {max: 2}\n",
			[]string{`7: target.restart.policy is required: on-failure (start a crashed target again) or no`}},
		{"max zero", restartBase + "    restart: {policy: on-failure, max: 0}\n",
			[]string{`7: target.restart.max must be within 1..100 (how many times a crashed target is started again), got 0`}},
		{"max negative", restartBase + "    restart:\n      policy: on-failure\n      max: -1\n",
			[]string{`9: target.restart.max must be within 1..100 (how many times a crashed target is started again), got -1`}},
		{"max with no", restartBase + "    restart: {policy: \"no\", max: 3}\n",
			[]string{`7: target.restart.max is for policy on-failure; policy no never restarts`}},
		{"max type", restartBase + "    restart: {policy: on-failure, max: lots}\n",
			[]string{`7: want a whole number, got a string (lots)`}},
		{"unknown key", restartBase + "    restart: {policy: on-failure, tries: 3}\n",
			[]string{`7: unknown key "tries" in restart (known keys: policy, max)`}},
		{"url target", "name: x\nops: [{name: a, request: {path: /}}]\nenvironment:\n  target:\n    url: http://127.0.0.1:8080\n    restart: {policy: on-failure, max: 2}\n",
			[]string{`6: target.restart needs a target longhaul starts (target.command or target.image), not target.url`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want errors %q", s.Environment.Target.Restart, tt.want)
			}
			if got := lines(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
