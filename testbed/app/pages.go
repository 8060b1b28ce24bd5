package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type app struct {
	db      *sql.DB
	threads *threadPool
	conns   *level
	delay   time.Duration
	// rebind turns a query into the database's dialect (PostgreSQL's:
	// postgresQuery); nil leaves it as written, MariaDB's.
	rebind func(string) string

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	wait     prometheus.Histogram
	queries  prometheus.Counter
	qtime    prometheus.Histogram
}

// Buckets from 0.5 ms to 30 s: pages take milliseconds unloaded and seconds
// past the knee.
var buckets = prometheus.ExponentialBucketsRange(0.0005, 30, 24)

func newApp(db *sql.DB, threads, conns, queue int, delay time.Duration, reg prometheus.Registerer) *app {
	a := &app{
		db: db, threads: newThreadPool(threads, queue), conns: newLevel(conns), delay: delay,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bboard_requests_total",
			Help: "Pages answered, by interaction and HTTP status code."}, []string{"page", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bboard_request_duration_seconds",
			Help:    "Page residence from taking a thread to answering (the wait for a thread excluded).",
			Buckets: buckets}, []string{"page"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bboard_request_wait_seconds",
			Help: "Wait in the accept queue for a thread.", Buckets: buckets}),
		queries: prometheus.NewCounter(prometheus.CounterOpts{Name: "bboard_db_queries_total",
			Help: "SQL queries sent to the database."}),
		qtime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bboard_db_query_duration_seconds",
			Help:    "Query time seen by the app, from sending to the last row read (the emulated network delay excluded): the DB tier's residence per query.",
			Buckets: prometheus.ExponentialBucketsRange(0.00005, 10, 24)}),
	}
	reg.MustRegister(a.requests, a.duration, a.wait, a.queries, a.qtime)
	return a
}

// The browse-only interactions of RUBBoS, by servlet name.
func (a *app) routes(mux *http.ServeMux) {
	pages := map[string]func(*page) error{
		"StoriesOfTheDay":         a.storiesOfTheDay,
		"BrowseCategories":        a.browseCategories,
		"BrowseStoriesByCategory": a.browseStoriesByCategory,
		"OlderStories":            a.olderStories,
		"ViewStory":               a.viewStory,
		"ViewComment":             a.viewComment,
		"Search":                  a.search,
	}
	for name, fn := range pages {
		mux.Handle("GET /rubbos/"+name, a.serve(name, fn))
		// Series exist from the start, so that rate() over a window that
		// begins just after a restart counts a page's first requests too.
		a.requests.WithLabelValues(name, "200")
		a.duration.WithLabelValues(name)
	}
	mux.HandleFunc("GET /rubbos/health", a.health)
}

func (a *app) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.db.PingContext(ctx); err != nil {
		http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// page is one request being served: its connection, taken at the first
// query and held to the end, and the data the template shows.
type page struct {
	a    *app
	r    *http.Request
	conn *sql.Conn
	data map[string]any
}

func (a *app) serve(name string, fn func(*page) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queued := time.Now()
		if err := a.threads.acquire(r.Context()); err != nil {
			code := http.StatusServiceUnavailable
			if !errors.Is(err, errQueueFull) {
				code = 499 // the client went away while waiting
			}
			a.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
			http.Error(w, err.Error(), code)
			return
		}
		start := time.Now()
		a.wait.Observe(start.Sub(queued).Seconds())
		p := &page{a: a, r: r, data: map[string]any{"Title": name}}
		var buf bytes.Buffer
		err := fn(p)
		if err == nil {
			err = templates.ExecuteTemplate(&buf, name, p.data)
		}
		if p.conn != nil {
			p.conn.Close()
			a.conns.change(-1, 0)
		}
		a.threads.release()
		code := http.StatusOK
		switch {
		case errors.Is(err, errNotFound):
			code = http.StatusNotFound
		case err != nil:
			code = http.StatusInternalServerError
			log.Printf("app: %s: %v", name, err)
		}
		a.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
		a.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
		if err != nil {
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
	})
}

var errNotFound = errors.New("not found")

// query runs one SQL query on the page's connection (taken at the first
// query) and calls scan for each row.
func (p *page) query(scan func(*sql.Rows) error, q string, args ...any) error {
	a := p.a
	ctx := p.r.Context()
	if p.conn == nil {
		a.conns.change(0, 1)
		c, err := a.db.Conn(ctx)
		if err != nil {
			a.conns.change(0, -1)
			return err
		}
		a.conns.change(1, -1)
		p.conn = c
	}
	if a.delay > 0 {
		t := time.NewTimer(a.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if a.rebind != nil {
		q = a.rebind(q)
	}
	start := time.Now()
	rows, err := p.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	err = rows.Err()
	a.queries.Inc()
	a.qtime.Observe(time.Since(start).Seconds())
	return err
}

func (p *page) intParam(name string, def, lo, hi int) int {
	v, err := strconv.Atoi(p.r.URL.Query().Get(name))
	if err != nil {
		return def
	}
	return min(hi, max(lo, v))
}

type story struct {
	ID       int
	Title    string
	Body     string
	Date     time.Time
	Writer   int
	Nickname string
	Category int
}

type comment struct {
	ID       int
	Subject  string
	Comment  string
	Writer   int
	Nickname string
	Rating   int
	Date     time.Time
}

// nicknames fills in writer names with one query for all of them.
func (p *page) nicknames(ids []int) (map[int]string, error) {
	names := map[int]string{}
	if len(ids) == 0 {
		return names, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := "SELECT id, nickname FROM users WHERE id IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	err := p.query(func(r *sql.Rows) error {
		var id int
		var n string
		if err := r.Scan(&id, &n); err != nil {
			return err
		}
		names[id] = n
		return nil
	}, q, args...)
	return names, err
}

// storyList runs a query of stories, then names their writers.
func (p *page) storyList(q string, args ...any) ([]story, error) {
	var out []story
	err := p.query(func(r *sql.Rows) error {
		var s story
		if err := r.Scan(&s.ID, &s.Title, &s.Date, &s.Writer); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	}, q, args...)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(out))
	for i, s := range out {
		ids[i] = s.Writer
	}
	names, err := p.nicknames(ids)
	for i := range out {
		out[i].Nickname = names[out[i].Writer]
	}
	return out, err
}

// storiesOfTheDay: the latest stories (RUBBoS shows those of the last day).
func (a *app) storiesOfTheDay(p *page) error {
	s, err := p.storyList("SELECT id, title, date, writer FROM stories ORDER BY date DESC LIMIT 10")
	p.data["Stories"] = s
	return err
}

func (a *app) browseCategories(p *page) error {
	type cat struct {
		ID   int
		Name string
	}
	var cats []cat
	err := p.query(func(r *sql.Rows) error {
		var c cat
		if err := r.Scan(&c.ID, &c.Name); err != nil {
			return err
		}
		cats = append(cats, c)
		return nil
	}, "SELECT id, name FROM categories")
	p.data["Categories"] = cats
	return err
}

func (a *app) browseStoriesByCategory(p *page) error {
	c := p.intParam("category", 1, 1, 20)
	pg := p.intParam("page", 0, 0, 50)
	s, err := p.storyList("SELECT id, title, date, writer FROM stories WHERE category = ? ORDER BY date DESC LIMIT ?, 20", c, pg*20)
	p.data["Stories"] = s
	return err
}

// olderStories: the stories of one day, 10 to 80 days back.
func (a *app) olderStories(p *page) error {
	day := p.intParam("day", 20, 10, 80)
	to := storyEpoch.AddDate(0, 0, -day)
	s, err := p.storyList("SELECT id, title, date, writer FROM old_stories WHERE date > ? AND date <= ? ORDER BY date DESC LIMIT 20",
		to.AddDate(0, 0, -1), to)
	p.data["Stories"] = s
	return err
}

// storyEpoch is the "now" of the generated data (sql/data.sql).
var storyEpoch = time.Date(2011, 5, 16, 12, 0, 0, 0, time.UTC)

func (p *page) storyByID(id int) (story, error) {
	var s story
	found := false
	scan := func(r *sql.Rows) error {
		found = true
		return r.Scan(&s.ID, &s.Title, &s.Body, &s.Date, &s.Writer, &s.Category)
	}
	table := "stories"
	if id > 10000 {
		table = "old_stories"
	}
	if err := p.query(scan, "SELECT id, title, body, date, writer, category FROM "+table+" WHERE id = ?", id); err != nil {
		return s, err
	}
	if !found {
		return s, errNotFound
	}
	return s, p.query(func(r *sql.Rows) error { return r.Scan(&s.Nickname) }, "SELECT nickname FROM users WHERE id = ?", s.Writer)
}

// comments lists comments of a story (parent 0) or replies to one, with names.
func (p *page) comments(q string, args ...any) ([]comment, error) {
	var out []comment
	err := p.query(func(r *sql.Rows) error {
		var c comment
		if err := r.Scan(&c.ID, &c.Subject, &c.Writer, &c.Rating, &c.Date); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	}, q, args...)
	if err != nil || len(out) == 0 {
		return out, err
	}
	ids := make([]int, len(out))
	for i, c := range out {
		ids[i] = c.Writer
	}
	names, err := p.nicknames(ids)
	for i := range out {
		out[i].Nickname = names[out[i].Writer]
	}
	return out, err
}

func (a *app) viewStory(p *page) error {
	s, err := p.storyByID(p.intParam("storyId", 1, 1, 30000))
	if err != nil {
		return err
	}
	p.data["Story"] = s
	c, err := p.comments("SELECT id, subject, writer, rating, date FROM comments WHERE story_id = ? AND parent = 0 ORDER BY rating DESC LIMIT 20", s.ID)
	p.data["Comments"] = c
	return err
}

func (a *app) viewComment(p *page) error {
	id := p.intParam("commentId", 1, 1, 100000)
	var c comment
	found := false
	err := p.query(func(r *sql.Rows) error {
		found = true
		return r.Scan(&c.ID, &c.Subject, &c.Comment, &c.Writer, &c.Rating, &c.Date)
	}, "SELECT id, subject, comment, writer, rating, date FROM comments WHERE id = ?", id)
	if err != nil {
		return err
	}
	if !found {
		return errNotFound
	}
	if err := p.query(func(r *sql.Rows) error { return r.Scan(&c.Nickname) }, "SELECT nickname FROM users WHERE id = ?", c.Writer); err != nil {
		return err
	}
	p.data["Comment"] = c
	replies, err := p.comments("SELECT id, subject, writer, rating, date FROM comments WHERE parent = ? ORDER BY rating DESC LIMIT 20", c.ID)
	p.data["Comments"] = replies
	return err
}

// search is the search form and, with a search term, its three searches.
func (a *app) search(p *page) error {
	qs := p.r.URL.Query()
	term, in := qs.Get("search"), qs.Get("type")
	if term == "" {
		return nil
	}
	p.data["Term"] = term
	like := "%" + term + "%"
	var err error
	switch in {
	case "stories":
		p.data["Stories"], err = p.storyList("SELECT id, title, date, writer FROM stories WHERE title LIKE ? ORDER BY date DESC LIMIT 20", like)
	case "comments":
		p.data["Comments"], err = p.comments("SELECT id, subject, writer, rating, date FROM comments WHERE subject LIKE ? ORDER BY date DESC LIMIT 20", like)
	case "users":
		type user struct {
			ID       int
			Nickname string
			Rating   int
		}
		var users []user
		err = p.query(func(r *sql.Rows) error {
			var u user
			if err := r.Scan(&u.ID, &u.Nickname, &u.Rating); err != nil {
				return err
			}
			users = append(users, u)
			return nil
		}, "SELECT id, nickname, rating FROM users WHERE nickname LIKE ? LIMIT 20", term+"%")
		p.data["Users"] = users
	default:
		return fmt.Errorf("type %q: want stories, comments or users: %w", in, errNotFound)
	}
	return err
}

var templates = template.Must(template.New("").Parse(`
{{define "head"}}<!DOCTYPE html><html><head><title>RUBBoS: {{.Title}}</title></head><body>
<img src="/rubbos/static/logo.gif" alt="RUBBoS"><h1>{{.Title}}</h1>{{end}}
{{define "foot"}}<p><a href="/rubbos/static/browse.html">Browse</a> <a href="/rubbos/Search">Search</a></p></body></html>{{end}}
{{define "stories"}}<ul>{{range .}}<li><a href="/rubbos/ViewStory?storyId={{.ID}}">{{.Title}}</a> by {{.Nickname}}, {{.Date.Format "2006-01-02 15:04"}}</li>{{end}}</ul>{{end}}
{{define "comments"}}<ul>{{range .}}<li><a href="/rubbos/ViewComment?commentId={{.ID}}">{{.Subject}}</a> by {{.Nickname}} ({{.Rating}})</li>{{end}}</ul>{{end}}
{{define "StoriesOfTheDay"}}{{template "head" .}}{{template "stories" .Stories}}{{template "foot"}}{{end}}
{{define "BrowseStoriesByCategory"}}{{template "head" .}}{{template "stories" .Stories}}{{template "foot"}}{{end}}
{{define "OlderStories"}}{{template "head" .}}{{template "stories" .Stories}}{{template "foot"}}{{end}}
{{define "BrowseCategories"}}{{template "head" .}}<ul>{{range .Categories}}<li><a href="/rubbos/BrowseStoriesByCategory?category={{.ID}}">{{.Name}}</a></li>{{end}}</ul>{{template "foot"}}{{end}}
{{define "ViewStory"}}{{template "head" .}}{{with .Story}}<h2>{{.Title}}</h2><p>by {{.Nickname}}, {{.Date.Format "2006-01-02"}}</p><p>{{.Body}}</p>{{end}}{{template "comments" .Comments}}{{template "foot"}}{{end}}
{{define "ViewComment"}}{{template "head" .}}{{with .Comment}}<h2>{{.Subject}}</h2><p>by {{.Nickname}} ({{.Rating}})</p><p>{{.Comment}}</p>{{end}}{{template "comments" .Comments}}{{template "foot"}}{{end}}
{{define "Search"}}{{template "head" .}}<form action="/rubbos/Search"><input name="search" value="{{.Term}}">
<select name="type"><option>stories</option><option>comments</option><option>users</option></select></form>
{{with .Stories}}{{template "stories" .}}{{end}}{{with .Comments}}{{template "comments" .}}{{end}}
{{with .Users}}<ul>{{range .}}<li>{{.Nickname}} ({{.Rating}})</li>{{end}}</ul>{{end}}{{template "foot"}}{{end}}
`))
