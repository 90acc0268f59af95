//go:build race

package driver

// raceEnabled skips timing-sensitive assertions under the race detector,
// which slows every request several times.
const raceEnabled = true
