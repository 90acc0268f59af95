package scenarios

import (
	"math/rand/v2"
	"sort"
	"sync"
)

// DefaultMaxPoolEntries bounds each pool unless CompileOptions.MaxPoolEntries
// says otherwise. A full pool replaces a random old entry with each new one,
// so memory stays flat over a multi-day soak while the pool keeps turning over.
const DefaultMaxPoolEntries = 100_000

// Pools are the shared pools that captures append to and templates pick from.
// Safe for concurrent use. The set of pools is fixed by Compile: one per pool
// name used by a capture or a pick/take.
type Pools struct {
	byName map[string]*pool
	max    int
}

func newPools(max int) *Pools {
	if max <= 0 {
		max = DefaultMaxPoolEntries
	}
	return &Pools{byName: map[string]*pool{}, max: max}
}

// get returns the named pool, creating it (Compile only; not concurrent).
func (ps *Pools) get(name string) *pool {
	if pl, ok := ps.byName[name]; ok {
		return pl
	}
	pl := &pool{max: ps.max}
	ps.byName[name] = pl
	return pl
}

// Len returns the number of entries in the named pool (0 for an unknown pool).
func (ps *Pools) Len(name string) int {
	if ps == nil {
		return 0
	}
	pl, ok := ps.byName[name]
	if !ok {
		return 0
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.entries)
}

// Names returns the pool names, sorted.
func (ps *Pools) Names() []string {
	if ps == nil {
		return nil
	}
	names := make([]string, 0, len(ps.byName))
	for n := range ps.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Add appends value to the named pool, as a capture would (a JSON string's
// contents, not its quotes); it reports false for a pool the plan does not use.
// It is meant for seeding pools before a run and for tests.
func (ps *Pools) Add(name, value string) bool {
	pl, ok := ps.byName[name]
	if !ok {
		return false
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.addLocked([]byte(value), false, func(n int) int { return rand.IntN(n) })
	return true
}

// value is a captured value: the bytes of a JSON string's contents, or the
// raw text of any other JSON value (lit), which a template may render as a
// JSON number/boolean/object rather than a string.
type value struct {
	b   []byte
	lit bool
}

// pool is one named pool. Entries beyond len(entries) but within its capacity
// keep their buffers, so removing and adding entries reuses memory.
type pool struct {
	mu      sync.Mutex
	entries []value
	max     int
}

// add copies v into the pool, replacing a random entry when it is full.
func (pl *pool) add(v []byte, lit bool, rng *rand.Rand) {
	pl.mu.Lock()
	pl.addLocked(v, lit, rng.IntN)
	pl.mu.Unlock()
}

func (pl *pool) addLocked(v []byte, lit bool, intN func(int) int) {
	var e *value
	switch n := len(pl.entries); {
	case n >= pl.max:
		e = &pl.entries[intN(n)]
	case n < cap(pl.entries):
		pl.entries = pl.entries[:n+1]
		e = &pl.entries[n]
	default:
		pl.entries = append(pl.entries, value{})
		e = &pl.entries[n]
	}
	e.b = append(e.b[:0], v...)
	e.lit = lit
}

// appendRandom appends a random entry, escaped for esc, to dst; with remove
// the entry leaves the pool. It reports false when the pool is empty.
func (pl *pool) appendRandom(dst []byte, esc escMode, rng *rand.Rand, remove bool) ([]byte, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	n := len(pl.entries)
	if n == 0 {
		return dst, false
	}
	i := rng.IntN(n)
	dst = appendValue(dst, pl.entries[i].b, pl.entries[i].lit, esc)
	if remove {
		// Swap the removed entry past the end, where its buffer waits for reuse.
		pl.entries[i], pl.entries[n-1] = pl.entries[n-1], pl.entries[i]
		pl.entries = pl.entries[:n-1]
	}
	return dst, true
}
