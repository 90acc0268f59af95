package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary bytes to Parse. It must never panic, must answer
// quickly, and whatever it accepts must compile and render.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		s, err := Parse(data, "fuzz.yaml")
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Parse took %v", d)
		}
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Parse error %T %v, want non-empty Errors", err, err)
			}
			if s != nil {
				t.Fatal("Parse returned a scenario with an error")
			}
			return
		}
		p, err := Compile(s, CompileOptions{Seed: 1, MaxPoolEntries: 4, LookupEnv: func(string) (string, bool) { return "v", true }})
		if err != nil {
			t.Fatalf("Parse accepted what Compile refuses: %v", err)
		}
		vu := p.NewVU(1)
		var r Rendered
		for _, a := range append(p.Setup, p.Ops...) {
			if err := a.Render(vu, &r); err != nil && !errors.Is(err, ErrPoolEmpty) {
				t.Fatalf("Render %s: %v", a.Name, err)
			}
			a.Check(vu, 200, data)
			a.Check(vu, 201, []byte(`{"id": 1, "token": "t", "ids": [1, 2], "data": {"token": "x"}}`))
			a.ThinkTime(vu)
		}
	})
}
