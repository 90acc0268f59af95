package charts

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// WriteRunPage writes the page of run id as one self-contained HTML file
// (longhaul report --format html): the served page's markup with its CSS and
// JavaScript inline, allowed by a Content-Security-Policy of their hashes.
// Hover values work in the file; zoom, live updates and downloads need the
// server and are left out.
func WriteRunPage(ctx context.Context, w io.Writer, st Reader, id string) error {
	v, err := buildRun(ctx, st, id, runQuery{}, true, 0)
	if err != nil {
		return err
	}
	v.Page.CSS, v.Page.JS = cssJS()
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, "run.html", v); err != nil {
		return fmt.Errorf("render run %s: %w", id, err)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// cssJS is the UI's stylesheet and script, for inlining.
func cssJS() (template.CSS, template.JS) {
	return template.CSS(staticFile("ui.css")), template.JS(staticFile("ui.js"))
}

func staticFile(name string) string {
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// standaloneCSP allows exactly the page's inline style and script.
func standaloneCSP(p page) string {
	h := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return "default-src 'none'; script-src " + h(string(p.JS)) + "; style-src " + h(string(p.CSS)) + "; img-src data:; base-uri 'none'; form-action 'none'"
}

// WriteStoredPage writes the page of the stored run or comparison id as one
// self-contained HTML file (longhaul report ID --format html); its error is
// report.ErrNotStored when the store has neither.
func WriteStoredPage(ctx context.Context, w io.Writer, st Reader, id string) error {
	_, err := st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		if cr, ok := st.(ComparisonReader); ok {
			if _, cerr := cr.GetComparison(ctx, id); cerr == nil {
				return WriteComparisonPage(ctx, w, st, id)
			}
		}
		return report.ErrNotStored
	}
	if err != nil {
		return fmt.Errorf("read run %s: %w", id, err)
	}
	return WriteRunPage(ctx, w, st, id)
}
