package softalloc.bboard;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Limit is the app tier's concurrency limit where the thread pool was: with virtual threads every
 * request gets a thread, so the number of pages inside the app is bounded here, by a fair semaphore
 * of "permits" (the soft resource softalloc sizes as the tier's permits). A page waits at most
 * --limit-wait for a permit and is answered 503 after it, as a full thread pool's queue would have
 * refused it, rather than waiting on the JDBC pool until HikariCP's connectionTimeout.
 *
 * <p>Tomcat's own SemaphoreValve does not fit: it either blocks without a bound or refuses at once
 * (block=false), and its semaphore is made at start, so a new concurrency needs a restart of the
 * context. Tomcat 11's maxConnections bounds sockets, not requests: Apache's keep-alive connections
 * hold sockets whether or not a page runs.
 *
 * <p>The limit is resized at run time (the admin endpoint's limit=): growing releases permits,
 * shrinking takes them back as pages end (Semaphore.reducePermits), so the queue of waiters and its
 * fairness survive a resize. 0 means no limit: the pages pass and are only counted.
 */
final class Limit implements Filter {
  /** Sem exposes Semaphore's protected reducePermits, which shrinks without waiting. */
  static final class Sem extends Semaphore {
    Sem(int permits) {
      super(permits, true);
    }

    void shrink(int n) {
      reducePermits(n);
    }
  }

  private final long waitNanos;
  private volatile int limit;
  // Replaced when the limit goes to or from 0; a page releases the semaphore it took its permit from.
  private volatile Sem sem;
  private final AtomicInteger inside = new AtomicInteger();
  private final AtomicInteger waiting = new AtomicInteger();
  private final Counter admitted;
  private final Counter rejected;
  private final Timer waited;
  private final Timer held;

  Limit(int limit, long waitNanos, MeterRegistry registry) {
    this.waitNanos = waitNanos;
    this.limit = limit;
    this.sem = new Sem(limit);
    Gauge.builder("bboard.limit.permits", this, l -> l.limit)
        .description("The app's concurrency limit: pages that may run at once (0: no limit).")
        .register(registry);
    Gauge.builder("bboard.limit.permits.in.use", inside, AtomicInteger::get)
        .description("Pages inside the limit now (holding a permit; every running page when there is no limit).")
        .register(registry);
    Gauge.builder("bboard.limit.waiting", waiting, AtomicInteger::get)
        .description("Pages waiting for a permit now.")
        .register(registry);
    admitted = Counter.builder("bboard.limit.admitted").description("Pages given a permit.").register(registry);
    rejected =
        Counter.builder("bboard.limit.rejected")
            .description("Pages answered 503 after waiting --limit-wait for a permit.")
            .register(registry);
    waited = Timer.builder("bboard.limit.wait").description("Time a page waited for its permit.").register(registry);
    held =
        Timer.builder("bboard.limit.held")
            .description("Time a page held its permit: the rate of its sum is the mean of pages inside.")
            .register(registry);
  }

  int limit() {
    return limit;
  }

  /** resize sets the limit (0: none) for the pages that ask from now on. */
  synchronized void resize(int n) {
    int old = limit;
    if (n == old) {
      return;
    }
    if (old == 0 || n == 0) {
      Sem prev = sem;
      sem = new Sem(n);
      if (old != 0) {
        // The waiters of the old semaphore go in: there is no limit now.
        prev.release(prev.getQueueLength() + 1);
      }
    } else if (n > old) {
      sem.release(n - old);
    } else {
      sem.shrink(old - n);
    }
    limit = n;
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain)
      throws IOException, ServletException {
    Sem s = limit == 0 ? null : sem;
    if (s != null) {
      long start = System.nanoTime();
      waiting.incrementAndGet();
      boolean ok;
      try {
        ok = s.tryAcquire(waitNanos, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        ok = false;
      } finally {
        waiting.decrementAndGet();
      }
      waited.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
      if (!ok) {
        rejected.increment();
        ((HttpServletResponse) resp).sendError(503, "the app's concurrency limit is full");
        return;
      }
    }
    admitted.increment();
    inside.incrementAndGet();
    long in = System.nanoTime();
    try {
      chain.doFilter(req, resp);
    } finally {
      held.record(System.nanoTime() - in, TimeUnit.NANOSECONDS);
      inside.decrementAndGet();
      if (s != null) {
        s.release();
      }
    }
  }
}
