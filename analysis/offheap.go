package analysis

import (
	"fmt"
	"strings"
)

// Memory outside the managed heap.
//
// A leak need not be on the heap a GC manages: a Node.js server that keeps a
// Buffer per request grows process.memoryUsage().external (Buffers and
// ArrayBuffers live outside the V8 heap) and the RSS, while its post-GC heap
// only gains the Buffers' small JavaScript objects; native allocations (cgo,
// a C library's cache, mmap) grow the RSS alone. offHeapLeak puts those
// series through the leak gates (Mann–Kendall with the Hamed–Rao correction,
// Theil–Sen against requests, the growth floors, the tail test that rejects
// a plateau) and reports a leak outside the heap when one passes while the
// heap grew per request by at most LeakOptions.MaxHeapShare of it. The RSS
// of a target that embeds SQLite (a SQLite probe) gets an info note instead:
// SQLite's page cache and WAL index fill outside the heap as the file grows.

const (
	whatExternal = "off-heap memory (external: Buffers, ArrayBuffers)"
	whatRSS      = "RSS"
)

// offHeapSeries returns the readings of a Node.js process's external memory
// (taken with the inspector's forced GC) and of the target's RSS (the
// process probe's, else the one Node.js reports), against the requests served.
func offHeapSeries(inc *incarnation) (external, rss heapReadings) {
	var cum float64
	for i, w := range inc.ws {
		cum += float64(w.Requests)
		n := w.Probes.Node
		if n != nil {
			external.add(inc.t[i], cum, float64(n.ExternalBytes), i)
		}
		switch {
		case w.Probes.RSSBytes != nil:
			rss.add(inc.t[i], cum, float64(*w.Probes.RSSBytes), i)
		case n != nil && n.RSSBytes > 0:
			rss.add(inc.t[i], cum, float64(n.RSSBytes), i)
		}
	}
	return external, rss
}

// offHeapLeak reports memory growing outside the heap whose readings are
// heap (see the comment at the top of the file).
func (a *analyzer) offHeapLeak(inc *incarnation, heap heapReadings) (Finding, bool) {
	o := a.opts.Leak
	external, rss := offHeapSeries(inc)
	heapPerReq, heapOK := a.perRequest(heap)
	if !heapOK {
		return Finding{}, false
	}
	for _, c := range []struct {
		r            heapReadings
		what, source string
	}{
		{external, whatExternal, "process.memoryUsage() after forced GC"},
		{rss, whatRSS, "process probe"},
	} {
		if len(c.r.y) < o.MinReadings {
			continue
		}
		f, ok := a.growth(inc, c.r, c.what, c.source, 0)
		if !ok || f.Severity.Rank() < Warning.Rank() || f.Evidence.PerKRequests <= 0 {
			continue
		}
		perReq := f.Evidence.PerKRequests / 1000
		if heapPerReq > o.MaxHeapShare*perReq {
			continue // the heap grows as much: a heap leak (or none)
		}
		f.Evidence.Notes["off_heap"] = 1
		f.Evidence.Notes["heap_bytes_per_request"] = heapPerReq
		f.Evidence.Notes["heap_share"] = max(heapPerReq, 0) / perReq
		hb, ha := a.medianOf(heap.y[:quarter(len(heap.y))]), a.medianOf(heap.y[len(heap.y)-quarter(len(heap.y)):])
		f.Evidence.Notes["heap_before"], f.Evidence.Notes["heap_after"] = hb, ha
		grew := fmt.Sprintf("%s while the post-GC heap grew far less (%s → %s, %s per request against %s)",
			strings.TrimSuffix(f.Summary, ": likely a memory leak"), fmtBytes(hb), fmtBytes(ha), fmtBytes(max(heapPerReq, 0)), fmtBytes(perReq))
		if c.what == whatRSS && inc.sqliteFile {
			// An embedded SQLite keeps its page cache (up to cache_size per
			// connection) and the WAL index outside the heap, and fills
			// them as the file grows: in a short run that looks like a leak.
			f.Severity = Info
			f.Evidence.Notes["sqlite_cache"] = 1
			f.Summary = grew + ": the target embeds SQLite, whose page cache (per connection) and WAL index live outside the heap and fill as the database grows — no leak verdict; run longer to see whether it levels off"
			return f, true
		}
		f.Summary = grew + ": the growth is outside the managed heap (native memory, buffers) — likely a leak of Buffers or native allocations"
		return f, true
	}
	return Finding{}, false
}

// perRequest is the Theil–Sen slope of readings against requests (bytes per
// request); ok is false without requests to regress on.
func (a *analyzer) perRequest(h heapReadings) (float64, bool) {
	h = h.binned(a.opts.MaxPoints)
	if len(h.y) < 2 || h.req[len(h.req)-1] <= h.req[0] {
		return 0, false
	}
	l, ok := a.theilSen(h.req, h.y)
	return l.Slope, ok
}

// besideHeap adds the RSS and off-heap growth to a heap leak finding, so a
// reader sees whether the process grew by as much as its heap.
func (a *analyzer) besideHeap(inc *incarnation, f *Finding) {
	if f.Kind != KindLeak || f.Severity.Rank() < Warning.Rank() {
		return
	}
	external, rss := offHeapSeries(inc)
	var parts []string
	for _, c := range []struct {
		r    heapReadings
		name string
	}{{rss, "rss"}, {external, "external"}} {
		if len(c.r.y) < 2 {
			continue
		}
		q := quarter(len(c.r.y))
		before, after := a.medianOf(c.r.y[:q]), a.medianOf(c.r.y[len(c.r.y)-q:])
		f.Evidence.Notes[c.name+"_before"], f.Evidence.Notes[c.name+"_after"] = before, after
		label := "RSS"
		if c.name == "external" {
			label = "off-heap (external)"
		}
		s := fmt.Sprintf("%s %s → %s", label, fmtBytes(before), fmtBytes(after))
		if p, ok := a.perRequest(c.r); ok {
			f.Evidence.Notes[c.name+"_bytes_per_request"] = p
			s += fmt.Sprintf(" (%s per request)", fmtBytes(max(p, 0)))
		}
		parts = append(parts, s)
	}
	if len(parts) > 0 {
		f.Summary += "; " + strings.Join(parts, ", ")
	}
}
