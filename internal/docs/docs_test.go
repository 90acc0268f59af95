// Package docs holds the tests that keep longhaul's documentation whole: every
// relative link in README.md, docs/*.md and scenarios/README.md resolves to a
// file (and, into a Markdown file, to a heading), the README stays a short
// front page, and its test command is the one CI runs.
package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, from this package's directory.
const root = "../.."

// MaxReadmeLines keeps README.md a front door: what longhaul is, the quick
// start, the two commands, a short tour and links. The guide is docs/.
const MaxReadmeLines = 220

// The README's two commands: CI (.ci/run) runs the second exactly as written.
const (
	mainCommand = "go run ./cmd/longhaul run scenarios/demo.yaml"
	testPrefix  = "go test -count=1 -timeout "
)

// documents returns the Markdown files whose links are checked.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "scenarios", "README.md")}, docs...)
}

func TestReadmeIsShort(t *testing.T) {
	n := len(lines(t, filepath.Join(root, "README.md")))
	if n > MaxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: it is the front door (what longhaul is, the quick start, "+
			"the two commands, a short tour, links). Put the guide in docs/<topic>.md and link it from docs/README.md.", n, MaxReadmeLines)
	}
}

func TestReadmeCommands(t *testing.T) {
	readme := lines(t, filepath.Join(root, "README.md"))
	ci := lines(t, filepath.Join(root, ".ci", "run"))
	if !contains(readme, mainCommand) {
		t.Errorf("README.md lost its first command line %q", mainCommand)
	}
	rt, ct := withPrefix(readme, testPrefix), withPrefix(ci, testPrefix)
	if len(rt) != 1 || len(ct) != 1 {
		t.Fatalf("want one %q line in README.md and in .ci/run, got %d and %d", testPrefix, len(rt), len(ct))
	}
	if rt[0] != ct[0] {
		t.Errorf("README.md's test command and .ci/run's differ:\nREADME: %s\nCI:     %s", rt[0], ct[0])
	}
}

// link matches Markdown inline links and images: [text](target) and
// ![alt](target "title").
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

func TestRelativeLinksResolve(t *testing.T) {
	docs := documents(t)
	if len(docs) < 3 {
		t.Fatalf("found %d documents, want README.md, scenarios/README.md and docs/*.md", len(docs))
	}
	checked := 0
	for _, doc := range docs {
		for _, l := range links(t, doc) {
			target := l.target
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			path, _, _ = strings.Cut(path, "?")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))
			}
			checked++
			rel, _ := filepath.Rel(root, doc)
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s:%d: link %q: %s does not exist", rel, l.line, target, path)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !headings(t, file)[anchor] {
				t.Errorf("%s:%d: link %q: no heading with anchor #%s in %s", rel, l.line, target, anchor, path)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative links found: the link pattern is broken")
	}
}

// TestSlug pins the anchor rule to GitHub's.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"A/B verdicts":                      "ab-verdicts",
		"`thresholds`":                      "thresholds",
		"Change points across nightly runs": "change-points-across-nightly-runs",
		"Running it for a team: server, workers, docker-compose": "running-it-for-a-team-server-workers-docker-compose",
		"Measured (all figures from `bench/`)":                   "measured-all-figures-from-bench",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

type mdLink struct {
	target string
	line   int
}

// links returns a Markdown file's inline links outside code blocks and code
// spans.
func links(t *testing.T, file string) []mdLink {
	var out []mdLink
	fenced := false
	for i, l := range lines(t, file) {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(withoutCodeSpans(l), -1) {
			out = append(out, mdLink{target: m[1], line: i + 1})
		}
	}
	return out
}

// headings returns the anchors GitHub gives a Markdown file's headings.
func headings(t *testing.T, file string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for _, l := range lines(t, file) {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		s := slug(strings.TrimLeft(l, "#"))
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's heading anchor: lower case, letters, digits, '-' and '_'
// kept, spaces made '-', everything else dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

var codeSpan = regexp.MustCompile("`[^`]*`")

func withoutCodeSpans(l string) string { return codeSpan.ReplaceAllString(l, "") }

func lines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func contains(ls []string, s string) bool {
	for _, l := range ls {
		if strings.TrimSpace(l) == s {
			return true
		}
	}
	return false
}

func withPrefix(ls []string, p string) []string {
	var out []string
	for _, l := range ls {
		if strings.HasPrefix(l, p) {
			out = append(out, l)
		}
	}
	return out
}
