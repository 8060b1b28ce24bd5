package softalloc.bboard;

/** Args are the app's command-line flags, in testbed/app's spelling where they mean the same. */
final class Args {
  String host = "127.0.0.1";
  int port = 18081;
  String adminHost = "127.0.0.1";
  int adminPort = 18082;
  String jdbcUrl = "jdbc:mariadb://127.0.0.1:18306/rubbos";
  String user = "rubbos";
  String password = "rubbos";
  int threads = 20;
  int connections = 10;
  int acceptCount = 100;
  long queryDelayNanos;
  // Tomcat's connector on virtual threads (Java 21 and later): maxThreads then bounds nothing.
  boolean virtualThreads;
  // The concurrency limit's permits (0: none) and how long a page waits for one before a 503.
  int limit;
  long limitWaitNanos = 2_000_000_000L;
  // HikariCP's connectionTimeout: its default, 30 s, unless set.
  long connectionTimeoutNanos = 30_000_000_000L;

  /** Bad is a flag with a bad value: one line naming it and what was expected. */
  static final class Bad extends Exception {
    Bad(String msg) {
      super(msg);
    }
  }

  static final String USAGE =
      "usage: bboard [-listen HOST:PORT] [-admin HOST:PORT] [-jdbc-url URL] [-user U] [-password P]"
          + " [-threads N] [-connections N] [-accept-count N] [-query-delay DURATION]"
          + " [-virtual-threads true|false] [-limit N] [-limit-wait DURATION] [-connection-timeout DURATION]";

  static Args parse(String[] argv) throws Bad {
    Args a = new Args();
    for (int i = 0; i < argv.length; i++) {
      String flag = argv[i].replaceFirst("^--?", "-");
      String val;
      int eq = flag.indexOf('=');
      if (eq > 0) {
        val = flag.substring(eq + 1);
        flag = flag.substring(0, eq);
      } else {
        if (i + 1 >= argv.length) {
          throw new Bad(flag + ": missing value; " + USAGE);
        }
        val = argv[++i];
      }
      switch (flag) {
        case "-listen" -> {
          a.host = host(flag, val);
          a.port = port(flag, val);
        }
        case "-admin" -> {
          a.adminHost = host(flag, val);
          a.adminPort = port(flag, val);
        }
        case "-jdbc-url" -> a.jdbcUrl = val;
        case "-user" -> a.user = val;
        case "-password" -> a.password = val;
        case "-threads" -> a.threads = count(flag, val, 1);
        case "-connections" -> a.connections = count(flag, val, 1);
        case "-accept-count" -> a.acceptCount = count(flag, val, 0);
        case "-query-delay" -> a.queryDelayNanos = duration(flag, val);
        case "-virtual-threads" -> a.virtualThreads = bool(flag, val);
        case "-limit" -> a.limit = count(flag, val, 0);
        case "-limit-wait" -> a.limitWaitNanos = duration(flag, val);
        case "-connection-timeout" -> {
          a.connectionTimeoutNanos = duration(flag, val);
          if (a.connectionTimeoutNanos < 250_000_000L) {
            throw new Bad(flag + " " + val + ": want at least 250ms (HikariCP's minimum)");
          }
        }
        default -> throw new Bad("unknown flag " + argv[i] + "; " + USAGE);
      }
    }
    return a;
  }

  static boolean bool(String flag, String v) throws Bad {
    return switch (v) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new Bad(flag + " " + v + ": want true or false");
    };
  }

  static String host(String flag, String v) throws Bad {
    int i = v.lastIndexOf(':');
    if (i <= 0) {
      throw new Bad(flag + " " + v + ": want HOST:PORT such as 127.0.0.1:18081");
    }
    return v.substring(0, i);
  }

  static int port(String flag, String v) throws Bad {
    String p = v.substring(v.lastIndexOf(':') + 1);
    try {
      int n = Integer.parseInt(p);
      if (n >= 0 && n < 65536) {
        return n; // 0: any free port
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new Bad(flag + " " + v + ": want HOST:PORT with a port 0..65535");
  }

  static int count(String flag, String v, int min) throws Bad {
    try {
      int n = Integer.parseInt(v);
      if (n >= min) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new Bad(flag + " " + v + ": want an integer >= " + min);
  }

  /** duration reads Go's spelling, which testbed.sh shares with testbed/app: 5ms, 500us, 1.5s, 0. */
  static long duration(String flag, String v) throws Bad {
    var m = java.util.regex.Pattern.compile("([0-9]+(?:\\.[0-9]+)?)(ns|us|µs|ms|s)?").matcher(v);
    if (m.matches() && (m.group(2) != null || Double.parseDouble(m.group(1)) == 0)) {
      double x = Double.parseDouble(m.group(1));
      String unit = m.group(2) == null ? "s" : m.group(2);
      double nanos =
          switch (unit) {
            case "ns" -> x;
            case "us", "µs" -> x * 1e3;
            case "ms" -> x * 1e6;
            default -> x * 1e9;
          };
      return Math.round(nanos);
    }
    throw new Bad(flag + " " + v + ": want a duration such as 5ms or 0");
  }
}
