package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// page is one page's template: the layout with that page's "content".
type page struct{ t *template.Template }

// view is what every page's template gets: the layout's parts and the
// page's own data in D.
type view struct {
	Title string
	// Nav names the navigation entry to mark as current.
	Nav string
	// CSRF is the session's token for the page's forms; empty on the
	// sign-in page.
	CSRF     string
	SignedIn bool
	// Flash says what an action just did; Problem what went wrong.
	Flash, Problem string
	Now            time.Time
	D              any
}

// parsePages parses every page template with the layout, once at start:
// a template that does not parse stops New, not a request.
func parsePages() (map[string]*page, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	pages := map[string]*page{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		pages[name] = &page{t: t}
	}
	return pages, nil
}

// render writes page name with v. The page is rendered into a buffer
// first, so a template error is a clean 500, never half a page.
func (c *Console) render(w http.ResponseWriter, status int, name string, v view) {
	p := c.pages[name]
	if p == nil {
		http.Error(w, "no such console page: "+name, http.StatusInternalServerError)
		return
	}
	v.Now = c.o.Now().UTC()
	var buf bytes.Buffer
	if err := p.t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.o.Logger.Error().Str("event", "console_render_failed").Str("page", name).Str("error", err.Error()).
			Msg("a console page failed to render")
		http.Error(w, "the console could not render this page (logged as console_render_failed)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// funcs are the templates' helpers; each formats, none reads anything.
var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		case *time.Time:
			if v == nil || v.IsZero() {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		return "—"
	},
	// ago is how long before now t was, in words ("3m 20s ago").
	"ago": func(now time.Time, t any) string {
		var at time.Time
		switch v := t.(type) {
		case time.Time:
			at = v
		case *time.Time:
			if v != nil {
				at = *v
			}
		}
		if at.IsZero() {
			return "never"
		}
		d := now.Sub(at)
		if d < 0 {
			return "in " + human(-d)
		}
		return human(d) + " ago"
	},
	// age is a number of seconds (nil: none) in words.
	"age": func(s any) string {
		switch v := s.(type) {
		case *int64:
			if v == nil {
				return "—"
			}
			return human(time.Duration(*v) * time.Second)
		case int64:
			return human(time.Duration(v) * time.Second)
		case int:
			return human(time.Duration(v) * time.Second)
		}
		return "—"
	},
	"deref": func(p *int64) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprint(*p)
	},
	"add": func(a, b int) int { return a + b },
}

// human writes d as its two largest units: 45s, 3m 20s, 2h 5m, 3d 4h.
func human(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}
