package softalloc.bboard;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Metrics are the app's own meters, named as testbed/app names its client_golang ones, so that the
 * deployment files' queries of per-page and per-query time read both apps: bboard_requests_total,
 * bboard_request_duration_seconds, bboard_db_queries_total, bboard_db_query_duration_seconds.
 */
final class Metrics {
  final MeterRegistry registry;
  final Counter queries;
  final Timer queryTime;
  private final ConcurrentHashMap<String, Counter> requests = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Timer> durations = new ConcurrentHashMap<>();

  Metrics(MeterRegistry registry) {
    this.registry = registry;
    queries = Counter.builder("bboard.db.queries").description("SQL queries sent to the database.").register(registry);
    queryTime =
        Timer.builder("bboard.db.query.duration")
            .description(
                "Query time seen by the app, from sending to the last row read (the emulated network delay excluded).")
            .register(registry);
    // Series exist from the start, so that rate() over a window that begins just after a restart
    // counts a page's first requests too.
    for (String name : Pages.NAMES) {
      request(name, 200);
      duration(name);
    }
  }

  Counter request(String page, int code) {
    return requests.computeIfAbsent(
        page + " " + code,
        k ->
            Counter.builder("bboard.requests")
                .description("Pages answered, by interaction and HTTP status code.")
                .tag("page", page)
                .tag("code", Integer.toString(code))
                .register(registry));
  }

  Timer duration(String page) {
    return durations.computeIfAbsent(
        page,
        k ->
            Timer.builder("bboard.request.duration")
                .description("Page residence in the servlet, from taking a Tomcat thread to answering.")
                .tag("page", page)
                .register(registry));
  }

  void query(long nanos) {
    queries.increment();
    queryTime.record(nanos, TimeUnit.NANOSECONDS);
  }
}
