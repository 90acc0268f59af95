package follow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// Comparison is what following a comparison needs to know about it.
type Comparison struct {
	ID     string
	Format report.Format
	// Pairs planned (the most, with --pairs auto), RoundDuration and
	// Window: for the progress bar, the round numbers and the poll interval.
	Pairs         int
	RoundDuration time.Duration
	Window        time.Duration
	// FailOnWorse: exit 3 when the comparison completes and a metric is worse.
	FailOnWorse bool
	// DetachNote is printed when the user detaches (a second Ctrl-C).
	DetachNote string
}

// FollowComparison prints each round as it ends (and the equivalence
// check's outcome, the history line and each look of a sequential
// comparison once known) until the workflow ends, then the comparison's
// report. Its error is an Exit for a comparison that failed, was cancelled,
// or completed with a worse metric under FailOnWorse.
func FollowComparison(ctx context.Context, t Terminal, st store.Store, wf Workflow, c Comparison) error {
	var progress *report.Progress
	if c.Format == report.Text {
		progress = report.NewProgress(t.Stderr, time.Now(), time.Duration(2*c.Pairs)*c.RoundDuration)
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go progress.Run(pctx, time.Second)
	}
	pr := comparisonPrinter{t: t, format: c.Format, progress: progress, printed: map[int]bool{}, total: 2 * c.Pairs}
	read := func() (store.Comparison, error) {
		cmp, err := st.GetComparison(ctx, c.ID)
		if err != nil {
			return cmp, storeRead{fmt.Errorf("read comparison %s: %w", c.ID, err)}
		}
		return cmp, nil
	}
	return (&loop{
		what: "comparison", poll: min(max(c.Window/2, 200*time.Millisecond), time.Second),
		progress: progress, detachNote: c.DetachNote,
		tick: func() error {
			cmp, err := read()
			if err != nil {
				return err
			}
			return pr.printNew(cmp)
		},
		status: func() (store.Status, string) {
			cmp, err := read()
			if err != nil {
				return "", ""
			}
			return cmp.Status, cmp.Reason
		},
		finish: func() error {
			cmp, err := read()
			if err != nil {
				return err
			}
			return finishComparison(t, cmp, c.Format, c.FailOnWorse)
		},
	}).run(ctx, t, wf)
}

// comparisonPrinter prints what is new in a comparison since its last call.
type comparisonPrinter struct {
	t        Terminal
	format   report.Format
	progress *report.Progress
	printed  map[int]bool // rounds printed, by index
	total    int          // rounds expected: grows with rerun pairs

	eqPrinted, historyPrinted bool
	looks                     int
}

func (p *comparisonPrinter) printNew(cmp store.Comparison) error {
	out := p.t.Stdout
	if !p.eqPrinted && cmp.Equivalence.Status != "" {
		p.eqPrinted = true
		if p.format == report.JSON {
			if err := report.WriteEquivalenceJSON(out, cmp.Equivalence); err != nil {
				return err
			}
		} else {
			p.progress.Around(func() { fmt.Fprintf(out, "equivalence: %s\n", report.EquivalenceLine(cmp.Equivalence)) })
		}
	}
	for _, r := range cmp.Rounds {
		if p.printed[r.Index] || !r.Status.Done() {
			continue
		}
		p.printed[r.Index] = true
		p.total = max(p.total, r.Index+1) // a rerun pair
		if p.format == report.JSON {
			if err := report.WriteRoundJSON(out, r); err != nil {
				return err
			}
			continue
		}
		p.progress.Around(func() { fmt.Fprintln(out, report.RoundLine(r, p.total)) })
	}
	if !p.historyPrinted && cmp.History != nil {
		p.historyPrinted = true
		if p.format == report.Text {
			p.progress.Around(func() { fmt.Fprintln(out, report.HistoryLine(*cmp.History)) })
		}
	}
	for ; p.looks < len(cmp.Looks); p.looks++ {
		l := cmp.Looks[p.looks]
		if p.format == report.JSON {
			if err := report.WriteLookJSON(out, l); err != nil {
				return err
			}
			continue
		}
		p.progress.Around(func() { fmt.Fprintln(out, strings.Join(report.LookLines(l), "\n")) })
	}
	return nil
}

// finishComparison prints the report of an ended comparison and maps its
// outcome to the exit code.
func finishComparison(t Terminal, cmp store.Comparison, format report.Format, failOnWorse bool) error {
	var err error
	if format == report.JSON {
		err = report.WriteComparisonJSON(t.Stdout, cmp)
	} else {
		fmt.Fprintln(t.Stdout)
		err = report.WriteComparisonText(t.Stdout, cmp)
	}
	if err != nil {
		return err
	}
	switch {
	case cmp.Status != store.Completed:
		return Exit{ExitFailed}
	case failOnWorse && len(report.WorseMetrics(cmp.Verdicts)) > 0:
		fmt.Fprintf(t.Stderr, "longhaul: B is worse on %s (--fail-on-worse)\n", strings.Join(report.WorseMetrics(cmp.Verdicts), ", "))
		return Exit{ExitGate}
	}
	return nil
}
