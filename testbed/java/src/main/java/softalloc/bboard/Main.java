package softalloc.bboard;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariConfigMXBean;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import com.zaxxer.hikari.metrics.micrometer.MicrometerMetricsTrackerFactory;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.tomcat.TomcatMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleState;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.AbstractProtocol;

/**
 * The testbed's Java application tier: testbed/app's bulletin board as servlets on embedded Tomcat,
 * with a HikariCP pool of MariaDB JDBC connections.
 *
 * <p>The pages are served on --listen (Tomcat's one HTTP connector: maxThreads --threads, acceptCount
 * --accept-count). Metrics (/metrics, Micrometer's Prometheus registry) and the admin endpoint that
 * resizes the pools at run time (/admin/pools) are on --admin, the JDK's own small HTTP server: a
 * scrape must not wait for a page thread, and the pool's threads are the pages' alone.
 */
public final class Main {
  // Tomcat's default minSpareThreads; capped at maxThreads.
  static final int MIN_SPARE = 10;

  public static void main(String[] args) {
    try {
      run(Args.parse(args));
    } catch (Args.Bad e) {
      System.err.println("bboard: " + e.getMessage());
      System.exit(2);
    } catch (Exception e) {
      System.err.println("bboard: " + e.getMessage());
      System.exit(1);
    }
  }

  static void run(Args a) throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new ClassLoaderMetrics().bindTo(registry);
    new JvmMemoryMetrics().bindTo(registry);
    new JvmGcMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    if (a.virtualThreads) {
      if (Runtime.version().feature() < 21) {
        throw new Args.Bad(
            "-virtual-threads true: this JVM is Java " + Runtime.version().feature()
                + "; virtual threads need Java 21 or later (the testbed runs them on Temurin 25)");
      }
      bindVirtualThreadMetrics(registry);
    }

    HikariConfig hc = new HikariConfig();
    hc.setPoolName("bboard");
    hc.setJdbcUrl(a.jdbcUrl);
    hc.setUsername(a.user);
    hc.setPassword(a.password);
    hc.setMaximumPoolSize(a.connections);
    hc.setMinimumIdle(a.connections); // HikariCP's default: a fixed-size pool
    hc.setRegisterMbeans(true); // HikariConfigMXBean, for those who resize it over JMX
    hc.setMetricsTrackerFactory(new MicrometerMetricsTrackerFactory(registry));
    hc.setConnectionTimeout(a.connectionTimeoutNanos / 1_000_000);
    // Fail at start, with the driver's message, when the database is not there.
    hc.setInitializationFailTimeout(10_000);
    HikariDataSource ds;
    try {
      ds = new HikariDataSource(hc);
    } catch (RuntimeException e) {
      throw new Exception("database " + a.jdbcUrl + ": " + rootMessage(e), e);
    }

    Tomcat tomcat = new Tomcat();
    tomcat.setBaseDir(Files.createTempDirectory("bboard-tomcat").toString());
    Connector connector = new Connector("org.apache.coyote.http11.Http11NioProtocol");
    connector.setPort(a.port);
    connector.setProperty("address", a.host);
    connector.setProperty("maxThreads", Integer.toString(a.threads));
    connector.setProperty("minSpareThreads", Integer.toString(Math.min(MIN_SPARE, a.threads)));
    connector.setProperty("acceptCount", Integer.toString(a.acceptCount));
    if (a.virtualThreads) {
      // The connector's own property rather than a StandardVirtualThreadExecutor: one setting, the
      // connector's internal executor (Tomcat's VirtualThreadExecutor, a virtual thread a request),
      // and nothing to share between connectors here. maxThreads and minSpareThreads are ignored.
      connector.setProperty("useVirtualThreads", "true");
    }
    tomcat.setConnector(connector);
    Context ctx = tomcat.addContext("/rubbos", null);
    Metrics metrics = new Metrics(registry);
    Pages pages = new Pages(ds, a.queryDelayNanos, metrics);
    Tomcat.addServlet(ctx, "pages", pages);
    for (String name : Pages.NAMES) {
      ctx.addServletMappingDecoded("/" + name, "pages");
    }
    // The concurrency limit guards the pages, not /health: a probe must not take a permit.
    Limit limit = new Limit(a.limit, a.limitWaitNanos, registry);
    org.apache.tomcat.util.descriptor.web.FilterDef fd = new org.apache.tomcat.util.descriptor.web.FilterDef();
    fd.setFilterName("limit");
    fd.setFilter(limit);
    ctx.addFilterDef(fd);
    org.apache.tomcat.util.descriptor.web.FilterMap fm = new org.apache.tomcat.util.descriptor.web.FilterMap();
    fm.setFilterName("limit");
    for (String name : Pages.NAMES) {
      fm.addURLPatternDecoded("/" + name);
    }
    ctx.addFilterMap(fm);
    ctx.addServletMappingDecoded("/health", "pages");
    tomcat.start();
    if (connector.getState() != LifecycleState.STARTED) {
      tomcat.stop();
      throw new Exception(
          "listen " + a.host + ":" + a.port + ": Tomcat's connector did not start (is the port taken?)");
    }
    // Tomcat's MBeans exist once it runs: busy and max threads of its pool.
    new TomcatMetrics(null, List.of()).bindTo(registry);

    Pools pools = new Pools(connector, ds, limit, a.virtualThreads);
    HttpServer admin;
    try {
      admin = HttpServer.create(new InetSocketAddress(a.adminHost, a.adminPort), 50);
    } catch (BindException e) {
      tomcat.stop();
      throw new Exception("admin " + a.adminHost + ":" + a.adminPort + ": " + e.getMessage() + " (is the port taken?)");
    }
    admin.setExecutor(Executors.newFixedThreadPool(2));
    admin.createContext("/metrics", ex -> reply(ex, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape()));
    admin.createContext("/admin/pools", ex -> pools.handle(ex));
    admin.start();

    System.err.printf(
        "bboard: serving on %s:%d (%s, %d connections, acceptCount %d, limit %d, query delay %.1f ms) on Java %d; metrics and admin on %s:%d%n",
        a.host, a.port, a.virtualThreads ? "virtual threads" : a.threads + " threads", a.connections, a.acceptCount,
        a.limit, a.queryDelayNanos / 1e6, Runtime.version().feature(), a.adminHost, a.adminPort);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  admin.stop(0);
                  try {
                    tomcat.stop();
                  } catch (Exception e) {
                    System.err.println("bboard: stopping Tomcat: " + e.getMessage());
                  }
                  ds.close();
                }));
    tomcat.getServer().await();
  }

  /**
   * bindVirtualThreadMetrics binds micrometer-java21's VirtualThreadMetrics (jvm.threads.virtual.*:
   * pinned, submit.failed from JFR, and live, pool size, parallelism from the JDK 24+ scheduler
   * MXBean) by reflection: its classes are Java 21's, and the jar is compiled for 17.
   */
  static void bindVirtualThreadMetrics(PrometheusMeterRegistry registry) throws Exception {
    Object binder =
        Class.forName("io.micrometer.java21.instrument.binder.jdk.VirtualThreadMetrics")
            .getConstructor()
            .newInstance();
    ((io.micrometer.core.instrument.binder.MeterBinder) binder).bindTo(registry);
  }

  static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String m = t.getMessage();
    return m == null ? t.getClass().getSimpleName() : m.replace('\n', ' ');
  }

  static void reply(HttpExchange ex, int code, String type, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", type);
    ex.sendResponseHeaders(code, b.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(b);
    }
  }

  /**
   * Pools resizes Tomcat's thread pool and HikariCP's connection pool of the running app: what a JMX
   * client would do with the connector's maxThreads and HikariConfigMXBean.setMaximumPoolSize, without
   * a JMX client in the testbed's shell script.
   */
  static final class Pools {
    final Connector connector;
    final HikariDataSource ds;
    final Limit limit;
    final boolean virtualThreads;

    Pools(Connector connector, HikariDataSource ds, Limit limit, boolean virtualThreads) {
      this.connector = connector;
      this.ds = ds;
      this.limit = limit;
      this.virtualThreads = virtualThreads;
    }

    void handle(HttpExchange ex) throws IOException {
      try {
        if (ex.getRequestMethod().equals("POST")) {
          Map<String, String> q = query(ex.getRequestURI());
          // threads= (Tomcat's maxThreads) and limit= (the permits, 0: none) each when given.
          int threads = q.containsKey("threads") ? positive(q, "threads") : 0;
          int lim = q.containsKey("limit") ? atLeastZero(q, "limit") : -1;
          int conns = positive(q, "connections");
          if (lim >= 0) {
            limit.resize(lim);
          }
          String err = resize(threads, conns, Duration.ofSeconds(20));
          if (err != null) {
            reply(ex, 504, "text/plain; charset=utf-8", err + "\n");
            return;
          }
        } else if (!ex.getRequestMethod().equals("GET")) {
          reply(ex, 405, "text/plain; charset=utf-8", "want GET or POST\n");
          return;
        }
        reply(ex, 200, "application/json", state());
      } catch (IllegalArgumentException e) {
        reply(ex, 400, "text/plain; charset=utf-8", e.getMessage() + "\n");
      } catch (RuntimeException e) {
        reply(ex, 500, "text/plain; charset=utf-8", rootMessage(e) + "\n");
      }
    }

    synchronized String state() {
      AbstractProtocol<?> p = (AbstractProtocol<?>) connector.getProtocolHandler();
      HikariPoolMXBean pool = ds.getHikariPoolMXBean();
      return String.format(
          "{\"virtualThreads\":%b,\"limit\":%d,\"threads\":%d,\"acceptCount\":%d,\"connections\":%d,\"totalConnections\":%d,\"idleConnections\":%d}%n",
          virtualThreads,
          limit.limit(),
          p.getMaxThreads(),
          p.getAcceptCount(),
          ds.getHikariConfigMXBean().getMaximumPoolSize(),
          pool.getTotalConnections(),
          pool.getIdleConnections());
    }

    /** resize sets both pools and waits until HikariCP holds exactly conns idle connections. */
    synchronized String resize(int threads, int conns, Duration timeout) {
      AbstractProtocol<?> p = (AbstractProtocol<?>) connector.getProtocolHandler();
      int spare = Math.min(MIN_SPARE, threads);
      // A ThreadPoolExecutor refuses a maximum below its core size: shrink the core first.
      if (threads == 0) {
        // not given: the thread pool stays (with virtual threads there is none)
      } else if (threads < p.getMaxThreads()) {
        p.setMinSpareThreads(spare);
        p.setMaxThreads(threads);
      } else {
        p.setMaxThreads(threads);
        p.setMinSpareThreads(spare);
      }
      HikariConfigMXBean cfg = ds.getHikariConfigMXBean();
      HikariPoolMXBean pool = ds.getHikariPoolMXBean();
      if (cfg.getMaximumPoolSize() != conns || pool.getTotalConnections() != conns) {
        cfg.setMaximumPoolSize(conns);
        cfg.setMinimumIdle(conns);
        // HikariCP hands out any connection its bag holds, and trims idle ones only after
        // idleTimeout: without eviction a shrunk pool would keep its old connections in use.
        // Evicted connections are replaced up to the new size, as a restart would open them.
        pool.softEvictConnections();
        // HikariCP opens the missing connections one by one, seconds apart, when nothing waits
        // for them: taking all of them at once makes it open them now.
        String err = borrowAll(conns);
        if (err != null) {
          return err;
        }
      }
      long deadline = System.nanoTime() + timeout.toNanos();
      while (pool.getTotalConnections() != conns || pool.getIdleConnections() != conns) {
        if (System.nanoTime() > deadline) {
          return String.format(
              "HikariCP did not reach %d idle connections within %ds (it holds %d, %d idle)",
              conns, timeout.toSeconds(), pool.getTotalConnections(), pool.getIdleConnections());
        }
        try {
          Thread.sleep(20); // polled: HikariCP announces no fill
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return "interrupted";
        }
      }
      System.err.printf(
          "bboard: pools resized: %d threads, limit %d, %d connections%n", threads, limit.limit(), conns);
      return null;
    }

    String borrowAll(int conns) {
      List<java.sql.Connection> held = new java.util.ArrayList<>(conns);
      try {
        for (int i = 0; i < conns; i++) {
          held.add(ds.getConnection());
        }
        return null;
      } catch (java.sql.SQLException e) {
        return "opening " + conns + " connections: " + rootMessage(e);
      } finally {
        for (java.sql.Connection c : held) {
          try {
            c.close();
          } catch (java.sql.SQLException e) {
            System.err.println("bboard: returning a connection: " + e.getMessage());
          }
        }
      }
    }

    static Map<String, String> query(URI uri) {
      Map<String, String> m = new HashMap<>();
      String raw = uri.getRawQuery();
      if (raw == null) {
        return m;
      }
      for (String kv : raw.split("&")) {
        int i = kv.indexOf('=');
        if (i > 0) {
          m.put(kv.substring(0, i), kv.substring(i + 1));
        }
      }
      return m;
    }

    static int atLeastZero(Map<String, String> q, String key) {
      String v = q.get(key);
      try {
        int n = Integer.parseInt(v);
        if (n >= 0) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      throw new IllegalArgumentException(key + "=" + v + ": want an integer >= 0 (0: no limit)");
    }

    static int positive(Map<String, String> q, String key) {
      String v = q.get(key);
      try {
        int n = Integer.parseInt(v);
        if (n >= 1) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      throw new IllegalArgumentException(key + "=" + v + ": want a positive integer");
    }
  }
}
