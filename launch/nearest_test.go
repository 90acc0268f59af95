package launch

import "testing"

func TestNearest(t *testing.T) {
	flags := []string{"detach", "duration", "window", "warmup", "target-env"}
	tests := []struct{ name, want string }{
		{"duraton", "duration"},       // one deletion
		{"widnow", "window"},          // two substitutions
		{"target-envs", "target-env"}, // one insertion
		{"detach", "detach"},          // itself
		{"timeout", ""},               // nothing within two edits
		{"", ""},
	}
	for _, tt := range tests {
		if got := Nearest(tt.name, flags); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	// The first of equally near names wins.
	if got := Nearest("ab", []string{"ax", "ay"}); got != "ax" {
		t.Errorf("Nearest(ab, [ax ay]) = %q, want ax", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"durration", "duration", 1}, {"pair", "pairs", 1}, {"widnow", "window", 2}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
