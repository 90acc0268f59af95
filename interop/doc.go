// Package interop brings results in from other tools and takes them out to
// others: k6's JSON output becomes a stored run (kind "imported") that the
// analysis, the reports and the UI treat like any soak; a stored run's
// windows go out as CSV, as NDJSON, or in the Go benchmark format that
// benchstat compares.
//
// Recipe:
//
//  1. ImportK6 reads `k6 run --out json=FILE` output (plain or gzip),
//     streaming in constant memory, and stores a run with its windows and
//     findings; ReadK6 is the reader alone, handing windows to any sink.
//  2. Export writes a run's windows: FormatCSV (one row per window with a
//     header), FormatJSON (the windows as `longhaul drive --format json`
//     prints them) or FormatBenchstat (one benchmark line per window after
//     warm-up, units such as p99-ms and req/s).
//  3. For a command line: ExportID exports a stored run or comparison by
//     ID, WriteImportText and WriteImportJSON print what ImportK6 did, and
//     ImportError explains its error; errors the user is to fix match
//     ErrBadInput.
//
// k6 is AGPL-licensed: this package implements its documented output
// format, not its code.
package interop
