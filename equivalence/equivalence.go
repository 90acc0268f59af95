// Package equivalence checks that two builds answer the same requests the
// same way before their speed is compared: it normalises JSON responses
// (generated ids, timestamps and UUIDs become placeholders, consistently
// within each side; object keys are order-free; ignored paths are dropped)
// and finds the first difference.
//
// The package is pure: it imports no Temporal and does no I/O.
package equivalence

// Status is the outcome of an equivalence check.
type Status string

// Statuses of an equivalence check.
const (
	Identical Status = "identical"
	Different Status = "different"
	Skipped   Status = "skipped"
)

// Result is what an equivalence check found.
type Result struct {
	Status Status `json:"status"`
	// Requests is how many requests each side answered.
	Requests int `json:"requests"`
	// FirstDifference is the first request whose responses differ (nil
	// unless Status is Different).
	FirstDifference *Difference `json:"first_difference,omitempty"`
	// Reason says why a check was skipped or could not finish.
	Reason string `json:"reason,omitempty"`
}

// Difference is where two responses first differ.
type Difference struct {
	// Request is the 1-based position of the request in the sequence.
	Request int    `json:"request"`
	Op      string `json:"op"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	// What is "status", "body" or "error".
	What string `json:"what"`
	// JSONPath is where in the body the values differ ("$.items[2].name";
	// "$" for the whole body; empty for a status difference).
	JSONPath string `json:"json_path,omitempty"`
	// A and B are the two sides' values there (JSON text, shortened).
	A string `json:"a"`
	B string `json:"b"`
}
