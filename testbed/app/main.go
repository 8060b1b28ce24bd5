// Command app is the testbed's application tier: a small bulletin board
// serving the RUBBoS browse-only interactions (stories of the day, view
// story, view comment, browse categories, search) with real SQL per page.
//
// Its soft resources are those of the paper's Tomcat: a bounded pool of
// handler "threads" (at most -threads pages run at once, at most
// -accept-queue more wait, the rest get 503 as Tomcat refuses connections
// beyond acceptCount) and a database/sql connection pool (-connections, via
// SetMaxOpenConns). A page holds its thread and its connection from start to
// end, as a servlet holds its JDBC connection.
//
// /metrics exposes pool sizes, busy units and their time integrals, request
// and query histograms (client_golang); /rubbos/health answers 200 when the
// database does.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	if err := run(); err != nil {
		log.Printf("app: %v", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:18081", "address to serve on (loopback)")
	dsn := flag.String("dsn", "root@tcp(127.0.0.1:18306)/rubbos", "data source name: MariaDB's in go-sql-driver/mysql form, or PostgreSQL's (postgres://... or key=value, pgx's form) with -driver pgx")
	driver := flag.String("driver", "mysql", "database driver: mysql (MariaDB) or pgx (PostgreSQL, directly or through PgBouncer)")
	threads := flag.Int("threads", 20, "handler pool: pages served at once (the app tier's thread pool)")
	conns := flag.Int("connections", 10, "DB connection pool (SetMaxOpenConns)")
	queue := flag.Int("accept-queue", 100, "requests that may wait for a thread; more get 503 (Tomcat's acceptCount)")
	delay := flag.Duration("query-delay", 0, "emulated network round trip per query, with the connection held; on one machine the tiers are microseconds apart, while the paper's were on separate hosts")
	flag.Parse()
	if *threads < 1 || *conns < 1 || *queue < 0 || *delay < 0 {
		return fmt.Errorf("want -threads and -connections >= 1, -accept-queue and -query-delay >= 0")
	}

	var db *sql.DB
	rebind := func(q string) string { return q }
	switch *driver {
	case "mysql":
		cfg, err := mysql.ParseDSN(*dsn)
		if err != nil {
			return fmt.Errorf("-dsn: %w", err)
		}
		cfg.ParseTime = true
		if db, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
			return err
		}
	case "pgx":
		var err error
		if db, err = sql.Open("pgx", *dsn); err != nil {
			return fmt.Errorf("-dsn: %w", err)
		}
		rebind = postgresQuery
	default:
		return fmt.Errorf("-driver %q: want mysql or pgx", *driver)
	}
	defer db.Close()
	db.SetMaxOpenConns(*conns)
	db.SetMaxIdleConns(*conns)
	db.SetConnMaxIdleTime(0)

	reg := prometheus.NewRegistry()
	a := newApp(db, *threads, *conns, *queue, *delay, reg)
	a.rebind = rebind
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db, "rubbos"),
		newPoolCollector(map[string]*level{"threads": a.threads.l, "connections": a.conns}),
	)

	mux := http.NewServeMux()
	a.routes(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Printf("app: serving on %s: %d threads, %d connections, accept queue %d, query delay %v", *listen, *threads, *conns, *queue, *delay)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
