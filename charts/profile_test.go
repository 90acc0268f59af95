package charts

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/profiles/profilestest"
	"github.com/longhaul-dev/longhaul/store"
)

const msNs = int64(time.Millisecond)

// seedProfiles gives run runID CPU profiles (main.spin burning burnMs per
// 100 requests when burn) and two heap profiles; and, with cmpID set, a
// comparison whose side A is runA and side B runID.
func seedProfiles(t testing.TB, st store.Store, runID string, burn bool) {
	t.Helper()
	ctx := context.Background()
	if err := st.PutRun(ctx, store.Run{ID: runID, Name: "profiled <soak>", Kind: "soak", Status: store.Completed, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		stacks := []profilestest.Stack{
			{Frames: []string{"encoding/json.Marshal", "main.(*server).listItems", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}, Value: 30 * msNs},
			{Frames: []string{"syscall.Syscall", "net.(*conn).Write", "net/http.(*conn).serve"}, Value: 20 * msNs},
			{Frames: []string{"runtime.gcBgMarkWorker"}, Value: 5 * msNs},
		}
		if burn {
			stacks = append(stacks, profilestest.Stack{Frames: []string{"main.spin", "main.cpuBurner.burn", "net/http.HandlerFunc.ServeHTTP", "net/http.(*conn).serve"}, Value: 60 * msNs})
		}
		if err := st.PutProfile(ctx, store.Profile{RunID: runID, Kind: store.ProfileCPU, Index: i * 5, Start: time.Now(), Duration: 5 * time.Second, Requests: 1000, Data: profilestest.CPU(stacks...)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range []int64{1 << 20, 40 << 20} {
		if err := st.PutProfile(ctx, store.Profile{RunID: runID, Kind: store.ProfileHeap, Index: i * 10, Start: time.Now(),
			Data: profilestest.Heap(profilestest.Stack{Frames: []string{"main.(*leakedMemory).retain", "main.handle"}, Value: b})}); err != nil {
			t.Fatal(err)
		}
	}
}

func seedProfiledComparison(t testing.TB, st store.Store) {
	t.Helper()
	seedProfiles(t, st, "prof-a", false)
	seedProfiles(t, st, "prof-b", true)
	if err := st.PutComparison(context.Background(), store.Comparison{ID: "cmp-prof", Name: "profiled", Status: store.Completed, CreatedAt: time.Now(), Rounds: []store.Round{
		{Index: 0, Side: store.SideA, RunID: "prof-a", Status: store.Completed},
		{Index: 1, Side: store.SideB, RunID: "prof-b", Status: store.Completed},
	}}); err != nil {
		t.Fatal(err)
	}
}

func TestProfilePages(t *testing.T) {
	st := storetest.New(t)
	seedProfiledComparison(t, st)
	u := &testUI{t: t, srv: New(Options{Store: st})}

	page := u.mustGet("/runs/prof-b/profile", "text/html")
	for _, want := range []string{"3 profiles merged over 3,000 requests", `<td class="mono">main.spin</td>`, "<svg class=\"flame\"", "<title>main.spin — 52.2 % of cpu</title>", `href="/runs/prof-b/profile.pb.gz"`} {
		if !strings.Contains(page, want) {
			t.Errorf("run profile page lacks %q", want)
		}
	}
	if styleAttr.MatchString(page) || inlineScript.MatchString(strings.ReplaceAll(page, `<script src="/static/ui.js"></script>`, "")) {
		t.Errorf("the profile page has a style attribute or an inline script")
	}
	heap := u.mustGet("/runs/prof-b/profile?kind=heap", "text/html")
	if !strings.Contains(heap, "main.(*leakedMemory).retain") || !strings.Contains(heap, "Heap profile") {
		t.Errorf("heap profile page:\n%s", heap)
	}

	// A comparison's side B, against A: main.spin moved +60 µs/request.
	cmp := u.mustGet("/comparisons/cmp-prof/profile?side=B", "text/html")
	if !strings.Contains(cmp, "B against A") || !strings.Contains(cmp, "<td class=\"r\">&#43;60.00</td>") {
		t.Errorf("comparison profile page lacks the diff:\n%s", cmp)
	}

	// The download is a profile go tool pprof reads: three merged.
	res, body := u.get("/comparisons/cmp-prof/profile.pb.gz?side=A")
	if res.StatusCode != 200 {
		t.Fatalf("download: %d %s", res.StatusCode, body)
	}
	p, err := profile.Parse(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("download is no profile: %v", err)
	}
	for _, f := range p.Function {
		if f.Name == "main.spin" {
			t.Errorf("side A's profile has B's main.spin")
		}
	}

	for _, path := range []string{"/runs/prof-b/profile?kind=x", "/comparisons/cmp-prof/profile?side=C"} {
		if res, _ := u.get(path); res.StatusCode != 400 {
			t.Errorf("GET %s: %d, want 400", path, res.StatusCode)
		}
	}
	if res, _ := u.get("/runs/nope/profile.pb.gz"); res.StatusCode != 404 {
		t.Errorf("GET a missing run's profile: %d, want 404", res.StatusCode)
	}
	// The run page links its profiles.
	if run := u.mustGet("/runs/prof-b", "text/html"); !strings.Contains(run, `href="/runs/prof-b/profile"`) {
		t.Errorf("the run page does not link its profiles")
	}
}

func TestBrowserProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	b := newBrowser(t)
	st := storetest.New(t)
	seedProfiledComparison(t, st)
	ui, err := Listen(Options{Store: st, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	b.do("profile page", chromedp.Navigate(ui.ComparisonURL("cmp-prof")+"/profile?side=B"), chromedp.WaitVisible(chromedp.CSS("svg.flame")))
	frames := js[int](b, "flame frames", `document.querySelectorAll('svg.flame rect').length`)
	if frames < 8 {
		t.Errorf("flame graph draws %d frames, want every function of the stacks", frames)
	}
	// The flame graph spans the page's width, main.spin's frame a third or more of it.
	w := js[float64](b, "spin width", `(() => { const svg = document.querySelector('svg.flame'); const t = Array.from(svg.querySelectorAll('g')).find(g => g.querySelector('title').textContent.startsWith('main.spin ')); return t.querySelector('rect').getBoundingClientRect().width / svg.getBoundingClientRect().width; })()`)
	if w < 0.4 || w > 0.6 {
		t.Errorf("main.spin's frame is %.2f of the graph's width, want ~0.52", w)
	}
	if rows := js[int](b, "diff rows", `document.querySelectorAll('table.profile-diff tbody tr').length`); rows < 1 {
		t.Errorf("no diff rows")
	}
	b.screenshot("profile")
	b.clean("profile page")
}
